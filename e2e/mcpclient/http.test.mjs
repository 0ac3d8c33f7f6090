// memmesh over streamable HTTP (the daemon's /mcp endpoint), driven by the
// official TypeScript SDK.
// Env: MEMMESH_HTTP_URL (http://127.0.0.1:PORT/mcp of a running daemon),
// MEMMESH_HTTP_TOKEN (its home's bearer token),
// MEMMESH_BIN and MEMMESH_HOME (that daemon's home, for a stdio client).
import { test } from 'node:test';

import { basics, sharedWrites } from './basics.mjs';
import { connectHTTP, connectStdio } from './lib.mjs';

test('memmesh over streamable HTTP', async (t) => {
  const client = await connectHTTP({ name: 'memmesh-e2e-http' });
  try {
    await basics(t, client, 'memmesh-e2e-http');
  } finally {
    await client.close();
  }
});

test('a stdio client and an HTTP client see each other\'s writes', async () => {
  const a = await connectStdio({ name: 'memmesh-e2e-stdio' });
  const b = await connectHTTP({ name: 'memmesh-e2e-http' });
  try {
    await sharedWrites(a, b);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('two HTTP clients (two sessions) see each other\'s writes', async () => {
  const a = await connectHTTP({ name: 'memmesh-e2e-http-a' });
  const b = await connectHTTP({ name: 'memmesh-e2e-http-b' });
  try {
    await sharedWrites(a, b);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});
