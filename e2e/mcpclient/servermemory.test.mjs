// Side by side: the same scripted knowledge-graph workload through the SDK
// against the official @modelcontextprotocol/server-memory and against
// `memmesh mcp --profile server-memory`; every read (read_graph,
// open_nodes, search_nodes) must give the same graph.
// Env: MEMMESH_BIN, MEMMESH_HOME (a fresh home), MEMMESH_IMPORT_HOME (another
// fresh home, into which the official server's memory.jsonl is imported).
//
// Results are compared as sets: entities sorted by name, their observations
// sorted, relations sorted by (from, relationType, to). Intentional
// difference: the order of entities, observations and relations is not
// compared (the official server keeps file order; memmesh returns them in
// its own order).
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { join } from 'node:path';

import { assert, connectOfficial, connectStdio, env, names, tempDir, text } from './lib.mjs';

export const serverMemoryTools = [
  'add_observations', 'create_entities', 'create_relations', 'delete_entities', 'delete_observations',
  'delete_relations', 'open_nodes', 'read_graph', 'search_nodes',
];

/** graph returns a normalised {entities, relations} from a tool result. */
export function graph(result, what) {
  assert.ok(!result.isError, `${what} failed: ${text(result)}`);
  const g = result.structuredContent ?? JSON.parse(text(result));
  return normalise(g);
}

export function normalise(g) {
  const entities = (g.entities ?? [])
    .map((e) => ({ name: e.name, entityType: e.entityType, observations: [...(e.observations ?? [])].sort() }))
    .sort((a, b) => cmp(a.name, b.name));
  const relations = (g.relations ?? [])
    .map((r) => ({ from: r.from, relationType: r.relationType, to: r.to }))
    .sort((a, b) => cmp(a.from, b.from) || cmp(a.relationType, b.relationType) || cmp(a.to, b.to));
  return { entities, relations };
}

function cmp(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

const entities = [
  { name: 'Alice', entityType: 'person', observations: ['Works at Acme', 'Likes Go'] },
  { name: 'Acme', entityType: 'company', observations: ['Makes anvils'] },
  { name: 'memmesh', entityType: 'project', observations: ['Written in Go', 'Stores memories in Pebble'] },
  { name: 'Bob', entityType: 'person', observations: ['Reviews pull requests'] },
  { name: 'Carol Smith', entityType: 'person', observations: ['Maintains the deploy scripts'] },
];
const relations = [
  { from: 'Alice', to: 'Acme', relationType: 'works_at' },
  { from: 'Alice', to: 'memmesh', relationType: 'contributes_to' },
  { from: 'Bob', to: 'Acme', relationType: 'works_at' },
  { from: 'Bob', to: 'memmesh', relationType: 'reviews' },
  { from: 'Carol Smith', to: 'memmesh', relationType: 'deploys' },
];

// The workload: [label, tool, arguments, how to compare the result].
// 'graph' compares the normalised graph; 'created' compares the sorted list
// of what a create call reports as new; 'added' the observations added;
// 'error' that both report an error result; 'ok' only that both succeed.
export const workload = [
  ['read_graph (empty)', 'read_graph', {}, 'graph'],
  ['create_entities', 'create_entities', { entities }, 'created'],
  ['create_entities again: only the new one is created', 'create_entities', {
    entities: [entities[0], { name: 'Dave', entityType: 'person', observations: [] }],
  }, 'created'],
  ['create_relations', 'create_relations', { relations }, 'created'],
  ['create_relations again: only the new one is created', 'create_relations', {
    relations: [relations[0], { from: 'Dave', to: 'Acme', relationType: 'works_at' }],
  }, 'created'],
  ['read_graph after creates', 'read_graph', {}, 'graph'],
  ['add_observations (one already there)', 'add_observations', {
    observations: [
      { entityName: 'Alice', contents: ['Speaks French', 'Likes Go'] },
      { entityName: 'Bob', contents: ['Prefers tabs'] },
    ],
  }, 'added'],
  ['add_observations to an unknown entity', 'add_observations', {
    observations: [{ entityName: 'Nobody', contents: ['Does not exist'] }],
  }, 'error'],
  ['add_observations is all or nothing: an unknown entity fails the whole call', 'add_observations', {
    observations: [
      { entityName: 'Alice', contents: ['Must not be added'] },
      { entityName: 'Nobody', contents: ['Does not exist'] },
    ],
  }, 'error'],
  ['read_graph after the failed calls', 'read_graph', {}, 'graph'],
  ['search_nodes by observation word', 'search_nodes', { query: 'Pebble' }, 'graph'],
  ['search_nodes by entity name', 'search_nodes', { query: 'Acme' }, 'graph'],
  ['search_nodes by entity type', 'search_nodes', { query: 'person' }, 'graph'],
  ['search_nodes, another case', 'search_nodes', { query: 'french' }, 'graph'],
  ['search_nodes by a part of a word', 'search_nodes', { query: 'anvil' }, 'graph'],
  ['search_nodes by a part of a word in several entities', 'search_nodes', { query: 'go' }, 'graph'],
  ['search_nodes with no match', 'search_nodes', { query: 'kubernetes' }, 'graph'],
  ['open_nodes (one unknown name)', 'open_nodes', { names: ['Alice', 'memmesh', 'Nobody'] }, 'graph'],
  ['open_nodes with a space in the name', 'open_nodes', { names: ['Carol Smith'] }, 'graph'],
  ['delete_observations', 'delete_observations', {
    deletions: [{ entityName: 'Alice', observations: ['Likes Go'] }],
  }, 'ok'],
  ['delete_relations', 'delete_relations', { relations: [relations[3]] }, 'ok'],
  ['read_graph after deleting an observation and a relation', 'read_graph', {}, 'graph'],
  ['delete_entities (removes its relations too)', 'delete_entities', { entityNames: ['Bob', 'Dave'] }, 'ok'],
  ['open_nodes after delete_entities', 'open_nodes', { names: ['Alice', 'Bob', 'Acme'] }, 'graph'],
  ['read_graph at the end', 'read_graph', {}, 'graph'],
];

/** compare turns a result into what is compared for its kind. */
function comparable(kind, tool, res) {
  switch (kind) {
    case 'graph':
      return graph(res, tool);
    case 'created': {
      assert.ok(!res.isError, `${tool} failed: ${text(res)}`);
      const out = res.structuredContent ?? { list: JSON.parse(text(res)) };
      const list = out.entities ?? out.relations ?? out.list;
      return normalise(tool === 'create_entities' ? { entities: list } : { relations: list });
    }
    case 'added': {
      assert.ok(!res.isError, `${tool} failed: ${text(res)}`);
      const out = res.structuredContent ?? { results: JSON.parse(text(res)) };
      return out.results
        .map((r) => ({ entityName: r.entityName, addedObservations: [...r.addedObservations].sort() }))
        .sort((a, b) => cmp(a.entityName, b.entityName));
    }
    case 'error':
      return { isError: res.isError === true };
    case 'ok':
      assert.ok(!res.isError, `${tool} failed: ${text(res)}`);
      return { ok: true };
    default:
      throw new Error(kind);
  }
}

let official;
let memmesh;
const memoryFile = join(tempDir(), 'memory.jsonl');

before(async () => {
  official = await connectOfficial(memoryFile);
  memmesh = await connectStdio({ name: 'memmesh-e2e-server-memory', args: ['--profile', 'server-memory'] });
});

after(async () => {
  await Promise.all([official?.close(), memmesh?.close()]);
});

test('the same tools with the same argument names', async () => {
  const [a, b] = await Promise.all([official.listTools(), memmesh.listTools()]);
  assert.deepEqual(names(a.tools), serverMemoryTools, 'the official server\'s tools changed: update this test');
  assert.deepEqual(names(b.tools), serverMemoryTools, 'memmesh --profile server-memory has other tools');
  const shape = (tools) => Object.fromEntries(tools.map((x) => [
    x.name, { properties: Object.keys(x.inputSchema.properties ?? {}).sort(), required: [...(x.inputSchema.required ?? [])].sort() },
  ]));
  assert.deepEqual(shape(b.tools), shape(a.tools));
});

test('the workload gives the same results on both servers', async (t) => {
  for (const [label, tool, args, kind] of workload) {
    await t.test(label, async () => {
      const [a, b] = await Promise.all([
        official.callTool({ name: tool, arguments: args }),
        memmesh.callTool({ name: tool, arguments: args }),
      ]);
      const want = comparable(kind, tool, a);
      const got = comparable(kind, tool, b);
      assert.deepEqual(got, want, `${tool}: memmesh differs from the official server`);
    });
  }
});

test('a relation type in free text (as many existing graphs have) round-trips', async () => {
  const rel = { from: 'Alice', to: 'Acme', relationType: 'is a founding member of' };
  for (const c of [official, memmesh]) {
    const res = await c.callTool({ name: 'create_relations', arguments: { relations: [rel] } });
    assert.ok(!res.isError, `create_relations: ${text(res)}`);
  }
  const [a, b] = await Promise.all([
    official.callTool({ name: 'open_nodes', arguments: { names: ['Alice'] } }),
    memmesh.callTool({ name: 'open_nodes', arguments: { names: ['Alice'] } }),
  ]);
  assert.deepEqual(graph(b, 'open_nodes'), graph(a, 'open_nodes'));
});

test('memmesh import --from server-memory keeps the official server\'s graph', async () => {
  const home = env('MEMMESH_IMPORT_HOME');
  execFileSync(env('MEMMESH_BIN'), ['--home', home, 'import', '--from', 'server-memory', memoryFile], { stdio: ['ignore', 'ignore', 'inherit'] });
  const imported = await connectStdio({ name: 'memmesh-e2e-import', home, args: ['--profile', 'server-memory'] });
  try {
    const [a, b, c] = await Promise.all([
      official.callTool({ name: 'read_graph', arguments: {} }),
      imported.callTool({ name: 'read_graph', arguments: {} }),
      memmesh.callTool({ name: 'read_graph', arguments: {} }),
    ]);
    const want = graph(a, 'read_graph');
    assert.ok(want.entities.length > 0 && want.relations.length > 0, 'the official graph is empty');
    assert.deepEqual(graph(b, 'read_graph'), want, 'the imported graph differs from the official one');
    assert.deepEqual(graph(c, 'read_graph'), want, 'the live memmesh graph differs from the official one');
  } finally {
    await imported.close();
  }
});
