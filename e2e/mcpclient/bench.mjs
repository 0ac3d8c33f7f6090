// Round-trip latency through a real stdio SDK client.
//
//  1. remember and recall against `memmesh mcp` (p50/p99 per call);
//  2. the same search_nodes and open_nodes workloads against the official
//     @modelcontextprotocol/server-memory and `memmesh mcp --profile
//     server-memory`, side by side in one run, on the same seeded graph.
//
// Env: MEMMESH_BIN, MEMMESH_HOME (a fresh home for 1), MEMMESH_GRAPH_HOME (a
// fresh home for 2; default MEMMESH_HOME), MEMMESH_BENCH_N (calls per
// measured operation, default 200), MEMMESH_BENCH_ENTITIES (graph size,
// default 500). Prints a table on stderr and one JSON object on stdout.
// Run through the Go benchmark: go test -run '^$' -bench MCP -benchtime 200x ./e2e
import { join } from 'node:path';

import { call, connectOfficial, connectStdio, env, percentile, tempDir } from './lib.mjs';

const n = Number(process.env.MEMMESH_BENCH_N ?? 200);
const graphSize = Number(process.env.MEMMESH_BENCH_ENTITIES ?? 500);

// A deterministic generator (xorshift) so that every run does the same work.
let seed = 0x9e3779b9;
function rand(k) {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed % k;
}
const words = (`postgres redis kafka retry backoff jitter timeout deadline context cancel goroutine channel mutex ` +
  `pebble bleve automerge index shard replica leader follower quorum snapshot compaction tombstone ` +
  `deploy release rollback canary feature flag config secret vault token rotate certificate tls ` +
  `http grpc protobuf schema migration column table query plan cache eviction ttl warmup ` +
  `logging tracing metrics alert dashboard latency throughput budget error panic recover ` +
  `test fixture mock fake clock flaky race deadlock benchmark profile allocation heap stack ` +
  `docker kubernetes helm terraform ansible nginx envoy ingress service pod node volume ` +
  `react typescript webpack vite eslint prettier css grid flexbox safari chrome firefox`).split(' ');
function sentence(k) {
  const out = [];
  for (let i = 0; i < k; i++) out.push(words[rand(words.length)]);
  return out.join(' ');
}

async function timed(fn) {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

function summary(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return { n: s.length, p50: round(percentile(s, 50)), p99: round(percentile(s, 99)), mean: round(s.reduce((a, b) => a + b, 0) / s.length) };
}
const round = (x) => Math.round(x * 1000) / 1000;

const results = {};
function report(op, r) {
  results[op] = r;
  process.stderr.write(`${op.padEnd(24)} n=${r.n}  p50=${r.p50.toFixed(2)} ms  p99=${r.p99.toFixed(2)} ms  mean=${r.mean.toFixed(2)} ms${r.seed_ms ? `  (seeding ${r.entities} entities: ${r.seed_ms} ms)` : ''}\n`);
}

// 1. remember and recall through `memmesh mcp`.
{
  const client = await connectStdio({ name: 'memmesh-bench' });
  for (let i = 0; i < 10; i++) await call(client, 'remember', { content: `warm up ${i}: ${sentence(12)}`, namespace: 'bench' });
  const rem = [];
  for (let i = 0; i < n; i++) {
    const content = `Note ${i}: ${sentence(16)}. ${sentence(10)}.`;
    rem.push(await timed(() => call(client, 'remember', { content, namespace: 'bench' })));
  }
  const rec = [];
  for (let i = 0; i < n; i++) {
    const query = `${words[rand(words.length)]} ${words[rand(words.length)]}`;
    rec.push(await timed(() => call(client, 'recall', { query, namespace: 'bench', limit: 10 })));
  }
  report('remember', summary(rem));
  report('recall', summary(rec));
  await client.close();
}

// 2. search_nodes and open_nodes, official server and memmesh side by side.
{
  const official = await connectOfficial(join(tempDir(), 'memory.jsonl'), { name: 'memmesh-bench' });
  const memmesh = await connectStdio({
    name: 'memmesh-bench', home: process.env.MEMMESH_GRAPH_HOME || env('MEMMESH_HOME'), args: ['--profile', 'server-memory'],
  });
  const servers = { official, memmesh };
  const entities = [];
  for (let i = 0; i < graphSize; i++) {
    entities.push({ name: `entity-${i}`, entityType: ['person', 'service', 'library', 'decision'][i % 4], observations: [sentence(8), sentence(8), sentence(8)] });
  }
  const relations = [];
  for (let i = 1; i < graphSize; i++) relations.push({ from: `entity-${i}`, to: `entity-${rand(i)}`, relationType: 'depends_on' });
  const seedStart = {};
  for (const [name, c] of Object.entries(servers)) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < entities.length; i += 100) await call(c, 'create_entities', { entities: entities.slice(i, i + 100) });
    for (let i = 0; i < relations.length; i += 100) await call(c, 'create_relations', { relations: relations.slice(i, i + 100) });
    seedStart[name] = round(Number(process.hrtime.bigint() - start) / 1e6);
  }
  const queries = [];
  for (let i = 0; i < n; i++) queries.push(words[rand(words.length)]);
  // Interleave the two servers query by query so that both see the same
  // machine conditions.
  const samples = { official: [], memmesh: [] };
  for (const q of queries.slice(0, 10)) for (const c of Object.values(servers)) await call(c, 'search_nodes', { query: q });
  for (const q of queries) {
    for (const [name, c] of Object.entries(servers)) samples[name].push(await timed(() => call(c, 'search_nodes', { query: q })));
  }
  for (const name of Object.keys(servers)) {
    report(`search_nodes_${name}`, { ...summary(samples[name]), entities: graphSize, seed_ms: seedStart[name] });
  }
  const opens = [];
  for (let i = 0; i < n; i++) opens.push([0, 1, 2].map(() => `entity-${rand(graphSize)}`));
  const opened = { official: [], memmesh: [] };
  for (const names of opens) {
    for (const [name, c] of Object.entries(servers)) opened[name].push(await timed(() => call(c, 'open_nodes', { names })));
  }
  for (const name of Object.keys(servers)) report(`open_nodes_${name}`, { ...summary(opened[name]), entities: graphSize });
  await Promise.all([official.close(), memmesh.close()]);
}

process.stdout.write(JSON.stringify(results) + '\n');
