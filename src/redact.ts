/**
 * What may be shown of secrets the user wrote into their configuration: a password in a base URL
 * (`http://user:pass@host`) never reaches an answer, a log line or stdout.
 */

/** The URL with its userinfo replaced by `***` (`http://***@host:8000/v1`); anything else unchanged. */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not a URL: still drop what looks like userinfo before an @ in the authority.
    return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1***@');
  }
  if (parsed.username === '' && parsed.password === '') return url;
  parsed.username = '***';
  parsed.password = '';
  return parsed.href.replace(/\/$/, url.endsWith('/') ? '/' : '');
}
