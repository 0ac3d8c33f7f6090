// The official memory server's own knowledge-graph scenarios
// (modelcontextprotocol/servers, src/memory/__tests__/knowledge-graph.test.ts),
// ported from calls on its KnowledgeGraphManager to MCP tool calls, and run
// against both the official @modelcontextprotocol/server-memory (which
// must pass them: the port is faithful) and `memmesh mcp --profile
// server-memory`. Each scenario starts from an empty graph: a new memory
// file for the official server, a new namespace for memmesh.
//
// Adapted: a "new manager instance on the same file" is a new server
// process on the same file or namespace; the scenario that reads the JSONL
// file itself checks what a new process reads back instead, since memmesh
// keeps no such file. Left out: the two upstream scenarios that refuse a
// relation to a missing entity, which the server version pinned in
// package.json stores (the last scenarios here check that memmesh does too).
//
// Env: MEMMESH_BIN, MEMMESH_HOME (a fresh home).
import { describe, it, afterEach } from 'node:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { assert, connectOfficial, connectStdio, tempDir, text } from './lib.mjs';

let serial = 0;

/** open starts a fresh graph on one of the two servers. */
async function open(kind) {
  serial++;
  const where = kind === 'official' ? join(tempDir(), `memory-${serial}.jsonl`) : `kg-${serial}`;
  const m = new Manager(kind, where);
  await m.connect();
  return m;
}

/** Manager calls the tools as the upstream tests call KnowledgeGraphManager. */
class Manager {
  constructor(kind, where) {
    this.kind = kind;
    this.where = where;
    this.clients = [];
  }

  async connect() {
    this.client = this.kind === 'official'
      ? await connectOfficial(this.where)
      : await connectStdio({ name: 'memmesh-e2e-knowledge-graph', args: ['--profile', 'server-memory', '--ns', this.where] });
    this.clients.push(this.client);
  }

  /** reopen is a new manager instance on the same graph: a new process. */
  async reopen() {
    const m = new Manager(this.kind, this.where);
    await m.connect();
    this.clients.push(...m.clients);
    return m;
  }

  async close() {
    await Promise.all(this.clients.map((c) => c.close()));
  }

  async call(name, args) {
    const res = await this.client.callTool({ name, arguments: args });
    if (res.isError) throw new Error(text(res));
    return res.structuredContent ?? JSON.parse(text(res));
  }

  async createEntities(entities) { return (await this.call('create_entities', { entities })).entities; }
  async createRelations(relations) { return (await this.call('create_relations', { relations })).relations; }
  async addObservations(observations) { return (await this.call('add_observations', { observations })).results; }
  async deleteEntities(entityNames) { await this.call('delete_entities', { entityNames }); }
  async deleteObservations(deletions) { await this.call('delete_observations', { deletions }); }
  async deleteRelations(relations) { await this.call('delete_relations', { relations }); }
  async readGraph() { return this.call('read_graph', {}); }
  async searchNodes(query) { return this.call('search_nodes', { query }); }
  async openNodes(names) { return this.call('open_nodes', { names }); }
}

const managers = [];
afterEach(async () => {
  await Promise.all(managers.splice(0).map((m) => m.close()));
});

for (const kind of ['official', 'memmesh']) {
  describe(`KnowledgeGraphManager scenarios on ${kind}`, () => {
    let manager;
    const fresh = async () => {
      manager = await open(kind);
      managers.push(manager);
    };

    describe('createEntities', () => {
      it('should create new entities', async () => {
        await fresh();
        const entities = [
          { name: 'Alice', entityType: 'person', observations: ['works at Acme Corp'] },
          { name: 'Bob', entityType: 'person', observations: ['likes programming'] },
        ];
        const newEntities = await manager.createEntities(entities);
        assert.equal(newEntities.length, 2);
        assert.deepEqual(newEntities, entities);
        const graph = await manager.readGraph();
        assert.equal(graph.entities.length, 2);
      });

      it('should not create duplicate entities', async () => {
        await fresh();
        const entities = [{ name: 'Alice', entityType: 'person', observations: ['works at Acme Corp'] }];
        await manager.createEntities(entities);
        const newEntities = await manager.createEntities(entities);
        assert.equal(newEntities.length, 0);
        const graph = await manager.readGraph();
        assert.equal(graph.entities.length, 1);
      });

      it('should handle empty entity arrays', async () => {
        await fresh();
        assert.equal((await manager.createEntities([])).length, 0);
      });
    });

    describe('createRelations', () => {
      it('should create new relations', async () => {
        await fresh();
        await manager.createEntities([
          { name: 'Alice', entityType: 'person', observations: [] },
          { name: 'Bob', entityType: 'person', observations: [] },
        ]);
        const relations = [{ from: 'Alice', to: 'Bob', relationType: 'knows' }];
        const newRelations = await manager.createRelations(relations);
        assert.equal(newRelations.length, 1);
        assert.deepEqual(newRelations, relations);
        const graph = await manager.readGraph();
        assert.equal(graph.relations.length, 1);
      });

      it('should not create duplicate relations', async () => {
        await fresh();
        await manager.createEntities([
          { name: 'Alice', entityType: 'person', observations: [] },
          { name: 'Bob', entityType: 'person', observations: [] },
        ]);
        const relations = [{ from: 'Alice', to: 'Bob', relationType: 'knows' }];
        await manager.createRelations(relations);
        const newRelations = await manager.createRelations(relations);
        assert.equal(newRelations.length, 0);
        const graph = await manager.readGraph();
        assert.equal(graph.relations.length, 1);
      });

      it('should handle empty relation arrays', async () => {
        await fresh();
        assert.equal((await manager.createRelations([])).length, 0);
      });
    });

    describe('addObservations', () => {
      it('should add observations to existing entities', async () => {
        await fresh();
        await manager.createEntities([{ name: 'Alice', entityType: 'person', observations: ['works at Acme Corp'] }]);
        const results = await manager.addObservations([{ entityName: 'Alice', contents: ['likes coffee', 'has a dog'] }]);
        assert.equal(results.length, 1);
        assert.equal(results[0].entityName, 'Alice');
        assert.equal(results[0].addedObservations.length, 2);
        const graph = await manager.readGraph();
        const alice = graph.entities.find((e) => e.name === 'Alice');
        assert.equal(alice?.observations.length, 3);
      });

      it('should not add duplicate observations', async () => {
        await fresh();
        await manager.createEntities([{ name: 'Alice', entityType: 'person', observations: ['works at Acme Corp'] }]);
        await manager.addObservations([{ entityName: 'Alice', contents: ['likes coffee'] }]);
        const results = await manager.addObservations([{ entityName: 'Alice', contents: ['likes coffee', 'has a dog'] }]);
        assert.equal(results[0].addedObservations.length, 1);
        assert.ok(results[0].addedObservations.includes('has a dog'));
        const graph = await manager.readGraph();
        const alice = graph.entities.find((e) => e.name === 'Alice');
        assert.equal(alice?.observations.length, 3);
      });

      it('should throw error for non-existent entity', async () => {
        await fresh();
        await assert.rejects(
          manager.addObservations([{ entityName: 'NonExistent', contents: ['some observation'] }]),
          /Entity with name NonExistent not found/,
        );
      });
    });

    describe('deleteEntities', () => {
      it('should delete entities', async () => {
        await fresh();
        await manager.createEntities([
          { name: 'Alice', entityType: 'person', observations: [] },
          { name: 'Bob', entityType: 'person', observations: [] },
        ]);
        await manager.deleteEntities(['Alice']);
        const graph = await manager.readGraph();
        assert.equal(graph.entities.length, 1);
        assert.equal(graph.entities[0].name, 'Bob');
      });

      it('should cascade delete relations when deleting entities', async () => {
        await fresh();
        await manager.createEntities([
          { name: 'Alice', entityType: 'person', observations: [] },
          { name: 'Bob', entityType: 'person', observations: [] },
          { name: 'Charlie', entityType: 'person', observations: [] },
        ]);
        await manager.createRelations([
          { from: 'Alice', to: 'Bob', relationType: 'knows' },
          { from: 'Bob', to: 'Charlie', relationType: 'knows' },
        ]);
        await manager.deleteEntities(['Bob']);
        const graph = await manager.readGraph();
        assert.equal(graph.entities.length, 2);
        assert.equal(graph.relations.length, 0);
      });

      it('should handle deleting non-existent entities', async () => {
        await fresh();
        await manager.deleteEntities(['NonExistent']);
        const graph = await manager.readGraph();
        assert.equal(graph.entities.length, 0);
      });
    });

    describe('deleteObservations', () => {
      it('should delete observations from entities', async () => {
        await fresh();
        await manager.createEntities([{ name: 'Alice', entityType: 'person', observations: ['works at Acme Corp', 'likes coffee'] }]);
        await manager.deleteObservations([{ entityName: 'Alice', observations: ['likes coffee'] }]);
        const graph = await manager.readGraph();
        const alice = graph.entities.find((e) => e.name === 'Alice');
        assert.equal(alice?.observations.length, 1);
        assert.ok(alice?.observations.includes('works at Acme Corp'));
      });

      it('should handle deleting from non-existent entities', async () => {
        await fresh();
        await manager.deleteObservations([{ entityName: 'NonExistent', observations: ['some observation'] }]);
        const graph = await manager.readGraph();
        assert.equal(graph.entities.length, 0);
      });
    });

    describe('deleteRelations', () => {
      it('should delete specific relations', async () => {
        await fresh();
        await manager.createEntities([
          { name: 'Alice', entityType: 'person', observations: [] },
          { name: 'Bob', entityType: 'person', observations: [] },
        ]);
        await manager.createRelations([
          { from: 'Alice', to: 'Bob', relationType: 'knows' },
          { from: 'Alice', to: 'Bob', relationType: 'works_with' },
        ]);
        await manager.deleteRelations([{ from: 'Alice', to: 'Bob', relationType: 'knows' }]);
        const graph = await manager.readGraph();
        assert.equal(graph.relations.length, 1);
        assert.equal(graph.relations[0].relationType, 'works_with');
      });
    });

    describe('readGraph', () => {
      it('should return empty graph when file does not exist', async () => {
        await fresh();
        const graph = await manager.readGraph();
        assert.equal(graph.entities.length, 0);
        assert.equal(graph.relations.length, 0);
      });

      it('should return complete graph with entities and relations', async () => {
        await fresh();
        await manager.createEntities([{ name: 'Alice', entityType: 'person', observations: ['works at Acme Corp'] }]);
        await manager.createRelations([{ from: 'Alice', to: 'Alice', relationType: 'self' }]);
        const graph = await manager.readGraph();
        assert.equal(graph.entities.length, 1);
        assert.equal(graph.relations.length, 1);
      });
    });

    describe('searchNodes', () => {
      const seed = async () => {
        await fresh();
        await manager.createEntities([
          { name: 'Alice', entityType: 'person', observations: ['works at Acme Corp', 'likes programming'] },
          { name: 'Bob', entityType: 'person', observations: ['works at TechCo'] },
          { name: 'Acme Corp', entityType: 'company', observations: ['tech company'] },
        ]);
        await manager.createRelations([
          { from: 'Alice', to: 'Acme Corp', relationType: 'works_at' },
          { from: 'Bob', to: 'Acme Corp', relationType: 'competitor' },
        ]);
      };

      it('should search by entity name', async () => {
        await seed();
        const result = await manager.searchNodes('Alice');
        assert.equal(result.entities.length, 1);
        assert.equal(result.entities[0].name, 'Alice');
      });

      it('should search by entity type', async () => {
        await seed();
        const result = await manager.searchNodes('company');
        assert.equal(result.entities.length, 1);
        assert.equal(result.entities[0].name, 'Acme Corp');
      });

      it('should search by observation content', async () => {
        await seed();
        const result = await manager.searchNodes('programming');
        assert.equal(result.entities.length, 1);
        assert.equal(result.entities[0].name, 'Alice');
      });

      it('should be case insensitive', async () => {
        await seed();
        const result = await manager.searchNodes('ALICE');
        assert.equal(result.entities.length, 1);
        assert.equal(result.entities[0].name, 'Alice');
      });

      it('should include relations where at least one endpoint matches', async () => {
        await seed();
        const result = await manager.searchNodes('Acme');
        assert.equal(result.entities.length, 2);
        assert.equal(result.relations.length, 2);
      });

      it('should include outgoing relations to unmatched entities', async () => {
        await seed();
        const result = await manager.searchNodes('Alice');
        assert.equal(result.entities.length, 1);
        assert.equal(result.relations.length, 1);
        assert.equal(result.relations[0].from, 'Alice');
        assert.equal(result.relations[0].to, 'Acme Corp');
      });

      it('should return empty graph for no matches', async () => {
        await seed();
        const result = await manager.searchNodes('NonExistent');
        assert.equal(result.entities.length, 0);
        assert.equal(result.relations.length, 0);
      });
    });

    describe('openNodes', () => {
      const seed = async () => {
        await fresh();
        await manager.createEntities([
          { name: 'Alice', entityType: 'person', observations: [] },
          { name: 'Bob', entityType: 'person', observations: [] },
          { name: 'Charlie', entityType: 'person', observations: [] },
        ]);
        await manager.createRelations([
          { from: 'Alice', to: 'Bob', relationType: 'knows' },
          { from: 'Bob', to: 'Charlie', relationType: 'knows' },
        ]);
      };
      const has = (result, from, to) => result.relations.some((r) => r.from === from && r.to === to);

      it('should open specific nodes by name', async () => {
        await seed();
        const result = await manager.openNodes(['Alice', 'Bob']);
        assert.equal(result.entities.length, 2);
        assert.ok(result.entities.map((e) => e.name).includes('Alice'));
        assert.ok(result.entities.map((e) => e.name).includes('Bob'));
      });

      it('should include all relations connected to opened nodes', async () => {
        await seed();
        const result = await manager.openNodes(['Alice', 'Bob']);
        assert.equal(result.relations.length, 2);
        assert.ok(has(result, 'Alice', 'Bob'));
        assert.ok(has(result, 'Bob', 'Charlie'));
      });

      it('should include relations connected to opened nodes', async () => {
        await seed();
        const result = await manager.openNodes(['Bob']);
        assert.equal(result.relations.length, 2);
        assert.ok(has(result, 'Alice', 'Bob'));
        assert.ok(has(result, 'Bob', 'Charlie'));
      });

      it('should include outgoing relations to nodes not in the open set', async () => {
        await seed();
        const result = await manager.openNodes(['Alice']);
        assert.equal(result.entities.length, 1);
        assert.equal(result.entities[0].name, 'Alice');
        assert.equal(result.relations.length, 1);
        assert.equal(result.relations[0].from, 'Alice');
        assert.equal(result.relations[0].to, 'Bob');
      });

      it('should include incoming relations from nodes not in the open set', async () => {
        await seed();
        const result = await manager.openNodes(['Charlie']);
        assert.equal(result.entities.length, 1);
        assert.equal(result.relations.length, 1);
        assert.equal(result.relations[0].from, 'Bob');
        assert.equal(result.relations[0].to, 'Charlie');
      });

      it('should handle opening non-existent nodes', async () => {
        await seed();
        const result = await manager.openNodes(['NonExistent']);
        assert.equal(result.entities.length, 0);
      });

      it('should handle empty node list', async () => {
        await seed();
        const result = await manager.openNodes([]);
        assert.equal(result.entities.length, 0);
        assert.equal(result.relations.length, 0);
      });
    });

    describe('file persistence', () => {
      it('should persist data across manager instances', async () => {
        await fresh();
        await manager.createEntities([{ name: 'Alice', entityType: 'person', observations: ['persistent data'] }]);
        const manager2 = await manager.reopen();
        const graph = await manager2.readGraph();
        assert.equal(graph.entities.length, 1);
        assert.equal(graph.entities[0].name, 'Alice');
      });

      it('should handle JSONL format correctly (what a new instance reads back)', async () => {
        await fresh();
        await manager.createEntities([{ name: 'Alice', entityType: 'person', observations: [] }]);
        await manager.createRelations([{ from: 'Alice', to: 'Alice', relationType: 'self' }]);
        if (kind === 'official') {
          const lines = readFileSync(manager.where, 'utf-8').split('\n').filter((line) => line.trim());
          assert.equal(lines.length, 2);
          assert.equal(JSON.parse(lines[0]).type, 'entity');
          assert.equal(JSON.parse(lines[1]).type, 'relation');
        }
        const graph = await (await manager.reopen()).readGraph();
        assert.deepEqual(graph, {
          entities: [{ name: 'Alice', entityType: 'person', observations: [] }],
          relations: [{ from: 'Alice', to: 'Alice', relationType: 'self' }],
        });
      });

      it('should strip type field from entities when loading from file', async () => {
        await fresh();
        await manager.createEntities([
          { name: 'Alice', entityType: 'person', observations: ['test observation'] },
          { name: 'Bob', entityType: 'person', observations: [] },
        ]);
        await manager.createRelations([{ from: 'Alice', to: 'Bob', relationType: 'knows' }]);
        const graph = await (await manager.reopen()).readGraph();
        assert.equal(graph.entities.length, 2);
        for (const entity of graph.entities) {
          assert.deepEqual(Object.keys(entity).sort(), ['entityType', 'name', 'observations']);
        }
        assert.equal(graph.relations.length, 1);
        for (const relation of graph.relations) {
          assert.deepEqual(Object.keys(relation).sort(), ['from', 'relationType', 'to']);
        }
      });

      it('should strip type field from searchNodes results', async () => {
        await fresh();
        await manager.createEntities([{ name: 'Alice', entityType: 'person', observations: ['works at Acme'] }]);
        await manager.createRelations([{ from: 'Alice', to: 'Alice', relationType: 'self' }]);
        const result = await (await manager.reopen()).searchNodes('Alice');
        assert.equal(result.entities.length, 1);
        assert.equal(result.entities[0].type, undefined);
        assert.equal(result.entities[0].name, 'Alice');
        assert.equal(result.relations.length, 1);
        assert.equal(result.relations[0].type, undefined);
        assert.equal(result.relations[0].from, 'Alice');
      });

      it('should strip type field from openNodes results', async () => {
        await fresh();
        await manager.createEntities([
          { name: 'Alice', entityType: 'person', observations: [] },
          { name: 'Bob', entityType: 'person', observations: [] },
        ]);
        await manager.createRelations([{ from: 'Alice', to: 'Bob', relationType: 'knows' }]);
        const result = await (await manager.reopen()).openNodes(['Alice', 'Bob']);
        assert.equal(result.entities.length, 2);
        for (const entity of result.entities) assert.equal(entity.type, undefined);
        assert.equal(result.relations.length, 1);
        assert.equal(result.relations[0].type, undefined);
      });
    });

    describe('relations to entities that do not exist (stored, as the pinned server does)', () => {
      it('stores a relation to and from a missing entity, in one batch with a valid one', async () => {
        await fresh();
        await manager.createEntities([
          { name: 'Alice', entityType: 'person', observations: [] },
          { name: 'Bob', entityType: 'person', observations: [] },
        ]);
        const relations = [
          { from: 'Alice', to: 'Bob', relationType: 'knows' },
          { from: 'Alice', to: 'Ghost', relationType: 'knows' },
          { from: 'Ghost', to: 'Bob', relationType: 'haunts' },
          { from: 'Ghost', to: 'Phantom', relationType: 'befriends' },
        ];
        assert.deepEqual(await manager.createRelations(relations), relations);
        const graph = await manager.readGraph();
        assert.equal(graph.entities.length, 2);
        assert.deepEqual(graph.relations, relations);
        const alice = await manager.openNodes(['Alice']);
        assert.deepEqual(alice.relations, relations.slice(0, 2));
        assert.equal((await manager.createRelations(relations)).length, 0, 'created twice');
      });

      it('joins the relation to the entity once it is created, and deletes it with it', async () => {
        await fresh();
        await manager.createEntities([{ name: 'Alice', entityType: 'person', observations: [] }]);
        await manager.createRelations([{ from: 'Alice', to: 'Ghost', relationType: 'knows' }]);
        await manager.createEntities([{ name: 'Ghost', entityType: 'spirit', observations: [] }]);
        const ghost = await (await manager.reopen()).openNodes(['Ghost']);
        assert.deepEqual(ghost.relations, [{ from: 'Alice', to: 'Ghost', relationType: 'knows' }]);
        await manager.deleteEntities(['Ghost']);
        assert.deepEqual((await manager.readGraph()).relations, []);
      });

      it('deletes a relation to a missing entity with delete_relations', async () => {
        await fresh();
        await manager.createEntities([{ name: 'Alice', entityType: 'person', observations: [] }]);
        await manager.createRelations([
          { from: 'Alice', to: 'Ghost', relationType: 'knows' },
          { from: 'Alice', to: 'Alice', relationType: 'self' },
        ]);
        await manager.deleteRelations([
          { from: 'Alice', to: 'Ghost', relationType: 'knows' },
          { from: 'Alice', to: 'Alice', relationType: 'self' },
        ]);
        assert.deepEqual((await manager.readGraph()).relations, []);
      });
    });
  });
}
