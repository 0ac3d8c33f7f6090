// memmesh over stdio, driven by the official TypeScript SDK.
// Env: MEMMESH_BIN (the memmesh binary), MEMMESH_HOME (a fresh home).
import { test } from 'node:test';

import { basics, sharedWrites } from './basics.mjs';
import { connectStdio } from './lib.mjs';

test('memmesh mcp over stdio', async (t) => {
  const client = await connectStdio({ name: 'memmesh-e2e-stdio' });
  try {
    await basics(t, client, 'memmesh-e2e-stdio');
  } finally {
    await client.close();
  }
});

test('two stdio clients on one home see each other\'s writes', async () => {
  const a = await connectStdio({ name: 'memmesh-e2e-a' });
  const b = await connectStdio({ name: 'memmesh-e2e-b' });
  try {
    await sharedWrites(a, b);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});
