// A skills server on the official TypeScript SDK (@modelcontextprotocol/server's ext/skills, pinned
// in package.json): serves every skill folder under argv[2] over stdio, as its README shows. With
// `--skills-only` it has no tool (and declares no tools capability).
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { loadSkills } from '@modelcontextprotocol/server/ext/skills/node';

const root = process.argv[2];
if (!root) {
  console.error('usage: skills_server.mjs SKILLS_DIR');
  process.exit(2);
}
const mcp = new McpServer({ name: 'sdk-skills', version: '1.0.0' });
if (process.argv[3] !== '--skills-only') {
  // A server with skills usually has tools too; this one has one.
  mcp.registerTool('ping', { description: 'Answers pong' }, async () => ({
    content: [{ type: 'text', text: 'pong' }],
  }));
}
const skills = await loadSkills(root, { strict: true });
skills.attach(mcp);
await mcp.connect(new StdioServerTransport());
