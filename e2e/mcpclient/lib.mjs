// Shared helpers of the memmesh end-to-end MCP tests. The tests use the
// official TypeScript SDK exactly as an MCP client application does.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** The official memory server's entry point, run with node (no npx). */
export const officialMemoryServer = fileURLToPath(
  new URL('./node_modules/@modelcontextprotocol/server-memory/dist/index.js', import.meta.url),
);

/** env returns the environment variable name, failing when it is unset. */
export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run these scripts through e2e/mcp_test.go)`);
  return v;
}

/** connectStdio spawns `memmesh mcp` on a home and connects an SDK client. */
export async function connectStdio({ name = 'memmesh-e2e-stdio', home = env('MEMMESH_HOME'), args = [] } = {}) {
  const transport = new StdioClientTransport({
    command: env('MEMMESH_BIN'),
    args: ['mcp', '--home', home, ...args],
    env: childEnv(),
    stderr: 'inherit',
  });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** connectOfficial spawns @modelcontextprotocol/server-memory on a memory file. */
export async function connectOfficial(memoryFile, { name = 'memmesh-e2e-official' } = {}) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [officialMemoryServer],
    env: { ...childEnv(), MEMORY_FILE_PATH: memoryFile },
    stderr: 'ignore', // it announces itself on stderr
  });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/**
 * connectHTTP connects an SDK client to a streamable HTTP endpoint with the
 * home's bearer token, as a client configured with the header does.
 */
export async function connectHTTP({ name = 'memmesh-e2e-http', url = env('MEMMESH_HTTP_URL'), token = env('MEMMESH_HTTP_TOKEN') } = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  return client;
}

// childEnv is the environment of spawned servers: this process's own, which
// the Go test set up (HOME, PATH, TMPDIR), so that nothing leaks from the
// developer's real home.
function childEnv() {
  const out = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) out[k] = v;
  return out;
}

/** tempDir returns a fresh directory removed when the process exits. */
export function tempDir(prefix = 'mmjs') {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** text joins a tool result's or prompt message's text content. */
export function text(result) {
  const content = result.content ?? [];
  return (Array.isArray(content) ? content : [content])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
}

/**
 * data returns a tool result's structured content, or its text parsed as
 * JSON when the tool has none; it fails on an error result.
 */
export function data(result, what = 'tool') {
  assert.ok(!result.isError, `${what} failed: ${text(result)}`);
  if (result.structuredContent !== undefined) return result.structuredContent;
  try {
    return JSON.parse(text(result));
  } catch {
    assert.fail(`${what}: result has neither structured content nor JSON text: ${JSON.stringify(result)}`);
  }
}

/** call calls a tool and returns its structured data (see data). */
export async function call(client, name, args = {}) {
  return data(await client.callTool({ name, arguments: args }), name);
}

/** names returns the sorted names (or uris) of listed items. */
export function names(items, key = 'name') {
  return items.map((i) => i[key]).sort();
}

/** hasAll asserts that want is a subset of got. */
export function hasAll(got, want, what) {
  const missing = want.filter((w) => !got.includes(w));
  assert.deepEqual(missing, [], `${what}: missing ${missing.join(', ')} (got ${got.join(', ')})`);
}

/** percentile of sorted samples (nearest rank). */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** findID looks for a memory id (m-...) anywhere in a value. */
export function findID(v) {
  const m = JSON.stringify(v).match(/\bm-[a-z0-9]{6,}\b/);
  return m ? m[0] : undefined;
}

export { assert };
