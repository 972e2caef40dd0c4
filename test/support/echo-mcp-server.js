// A stdio MCP server with one tool, `echo`: another of the user's MCP servers, which a delegate keeps
// (defaults.delegate_mcp: inherit) while localagents itself is left out. Run as `node echo-mcp-server.js`.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'echo', version: '1.0.0' });
server.registerTool(
  'echo',
  { description: 'Echoes its text.', inputSchema: { text: z.string() } },
  ({ text }) => ({ content: [{ type: 'text', text }] }),
);
await server.connect(new StdioServerTransport());
