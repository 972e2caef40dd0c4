import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { NotReadyResolution } from '../../registry/resolve.js';
import { jsonResult } from '../results.js';

/** The registry's "not running" / "config broken" answer as a normal tool answer (isError false) that tells Claude what to do. */
export function notReadyResult(resolution: NotReadyResolution): CallToolResult {
  if (resolution.kind === 'unknown_endpoint') {
    return jsonResult({
      status: 'unknown_endpoint',
      error: 'unknown_endpoint',
      endpoint: resolution.endpoint,
      known_endpoints: resolution.known,
      message: resolution.message,
      next: `Nothing was started. Pass one of ${resolution.known.join(', ')} as endpoint, or leave it out to use any endpoint that serves the model.`,
    });
  }
  if (resolution.kind === 'ambiguous') {
    return jsonResult({
      status: 'ambiguous_model',
      error: 'ambiguous_model',
      model: resolution.name,
      candidates: resolution.candidates,
      message: resolution.message,
      next: 'Nothing was started. Call again with model set to one of the served_model ids above.',
    });
  }
  if (resolution.kind === 'config_error') {
    return jsonResult({
      status: 'config_error',
      message: resolution.message,
      issues: resolution.issues,
      next: 'models.yaml is invalid: show the user the issues above and ask them to fix the file; nothing was started',
    });
  }
  const bringUp = resolution.bring_up ? ` It is started with: ${resolution.bring_up}.` : '';
  const where = resolution.host ? ` on ${resolution.host}` : '';
  return jsonResult({
    status: 'model_unavailable',
    // The Python original's field, kept for callers that read it.
    error: 'model_unavailable',
    model: resolution.name,
    host: resolution.host ?? null,
    notes: resolution.notes ?? null,
    bring_up: resolution.bring_up ?? null,
    served_now: resolution.servedNow,
    endpoints: resolution.servedNow,
    message: resolution.message,
    next: `Nothing was started. Ask the user to bring up ${resolution.name}${where}${resolution.notes ? ` (notes: ${resolution.notes})` : ''}.${bringUp} Or pick one of the models served now and call again.`,
  });
}
