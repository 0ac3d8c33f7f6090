// graph.js: the knowledge graph: a memory's or an artefact's
// neighbourhood (depth, direction, relations, as of a date), or a
// namespace's overview (its most connected memories with their
// neighbours, coloured by cluster), or all its memories and the edges
// between them, drawn on a canvas by Cytoscape.js; beside it the
// namespace's analysis (god nodes, bridges, gaps) and the cycles of
// acyclic relations.
//
// Stable test ids:
//   graph-canvas       the container the graph is drawn in
//   graph-node-count   "N nodes, M edges" (data-nodes, data-edges hold the numbers;
//                      data-render-ms the time from the data to the first frame,
//                      data-layout-ms the layout's part of it, data-render the
//                      renderer: canvas or webgl; data-view: focus, overview or all)
//   graph-show-all     the overview's button that shows all the memories
//   graph-focus        the start field (memory id, file:, code:, url:)
//   graph-depth        depth select
//   graph-direction    direction select
//   graph-rels         relation filter (a list of checkboxes)
//   graph-asof         the "as of" date field
//   graph-show         the button that draws the graph
//   graph-details      the side panel of the clicked node
//   graph-analysis     the namespace's analysis block
//   graph-analysis-ns  its namespace select, when all namespaces are shown
//   graph-god-nodes, graph-bridges, graph-gaps   its lists
//   graph-cycles       the cycles block
import { el, clear, short } from './api.js';
import { useStyles, section, memoryLink, clip, cut, failure, debounce, namespaceCounts } from './pagekit.js';

const RELS = ['related_to', 'supersedes', 'contradicts', 'depends_on', 'specializes', 'part_of',
  'alternative_to', 'builds_on', 'caused_by', 'led_to', 'learned_in', 'touches',
  'calls', 'imports', 'inherits', 'defined_in'];
const SIZES = [250, 500, 1000, 2000];
const PAGE = 1000; // the most memories one list call gives
// The overview of a namespace, the page's view without a start, shows
// the most connected of its newest POOL memories, each with its
// OVERVIEW_NEIGHBOURS most connected neighbours, up to OVERVIEW_MAX nodes:
// few enough to lay out by force (clusters show) with every label read.
const POOL = SIZES[SIZES.length - 1];
const OVERVIEW_MAX = 80;
const OVERVIEW_NEIGHBOURS = 4;
// The overview colours its clusters (found by label propagation) with
// CLUSTER_COLOURS colours, the largest clusters first.
const CLUSTER_COLOURS = 8;
// The overview's labels are OVERVIEW_FONT model pixels high (its hubs'
// larger), drawn from OVERVIEW_MIN_FONT pixels on screen: the overview is
// not shown below the zoom that keeps them drawn, even if a rim of it
// then lies outside the view.
const OVERVIEW_FONT = 12;
const OVERVIEW_MIN_FONT = 6;
// Above this many nodes a graph is large: its layout is a spiral (the
// start or the most connected in the centre; linear time) instead of a
// force-directed one (cose), its edges are straight lines without labels,
// and it is drawn with WebGL where the browser has it on a GPU.
const FORCE_MAX = 400;
// The zoom from which a large graph drawn with WebGL shows its labels (on
// a canvas, the style's min-zoomed-font-size hides them below about 0.5).
const LABEL_ZOOM = 0.6;
// The spiral's spacing, in model pixels: neighbours lie about 1.8 times
// as far apart (106 pixels at zoom 1), room for a label of BIG_LABEL
// characters beside the next.
const SPIRAL_GAP = 60;
// The characters of a large graph's labels: short enough not to run into
// the neighbours' and to need no wrapping (measuring where to cut each
// label costs more than drawing it).
const BIG_LABEL = 20;
// A large graph's nodes, in model pixels: seen as dots when the whole
// spiral fits the canvas (zoom about 0.1).
const BIG_NODE = 24;
// A small graph is not blown up beyond this zoom to fit the canvas.
const MAX_FIT_ZOOM = 1.5;

let cytoscapeLib = null;
async function loadCytoscape() {
  if (!cytoscapeLib) cytoscapeLib = (await import('./vendor/cytoscape.esm.min.js')).default;
  return cytoscapeLib;
}

export async function render(root, params, ctx) {
  useStyles();
  const q = params.query;
  const f = {
    focus: q.get('focus') || '',
    depth: q.get('depth') || '2',
    dir: q.get('dir') || 'both',
    rels: (q.get('rels') || '').split(',').filter(Boolean),
    asof: q.get('asof') || '',
    // no size: the overview; a size: that many of the newest memories
    size: q.get('size') || '',
    // canvas or webgl forces a renderer; by default a large graph is drawn
    // with WebGL when the browser has it on a GPU
    render: q.get('render') || '',
  };

  const focus = el('input', { type: 'text', value: f.focus, placeholder: 'm-… or file:path, code:path::symbol, url:…', 'aria-label': 'Start', 'data-testid': 'graph-focus', size: 40, spellcheck: false, autocomplete: 'off' });
  const depth = el('select', { 'aria-label': 'Depth', 'data-testid': 'graph-depth' },
    [1, 2, 3, 4, 5].map((d) => el('option', { value: String(d), selected: String(d) === f.depth }, 'depth ' + d)));
  const dir = el('select', { 'aria-label': 'Direction', 'data-testid': 'graph-direction' },
    [['both', 'both ways'], ['out', 'outgoing'], ['in', 'incoming']].map(([v, l]) => el('option', { value: v, selected: v === f.dir }, l)));
  const asof = el('input', { type: 'date', value: f.asof, 'aria-label': 'As of', 'data-testid': 'graph-asof' });
  const sizes = f.size && !SIZES.includes(Number(f.size)) ? [...SIZES, Number(f.size)].sort((a, b) => a - b) : SIZES;
  const size = el('select', { 'aria-label': 'Memories shown', title: 'Memories shown without a start' },
    el('option', { value: '', selected: !f.size }, 'most connected'),
    sizes.map((n) => el('option', { value: String(n), selected: String(n) === f.size }, n + ' memories')));
  const relBoxes = RELS.map((r) => el('input', { type: 'checkbox', value: r, checked: f.rels.includes(r) }));
  const rels = el('details', { class: 'rels', 'data-testid': 'graph-rels' },
    el('summary', {}, f.rels.length ? 'relations: ' + f.rels.join(', ') : 'all relations'),
    el('div', { class: 'relgrid' }, relBoxes.map((b) => el('label', {}, b, ' ' + b.value))));
  const show = el('button', { type: 'submit', class: 'primary', 'data-testid': 'graph-show' }, 'Show');
  const whole = el('button', { type: 'button', title: 'The namespace without a start' }, 'Namespace');
  const count = el('span', { class: 'muted', 'data-testid': 'graph-node-count', 'aria-live': 'polite' }, '');
  const showAll = el('button', { type: 'button', 'data-testid': 'graph-show-all', hidden: true }, '');
  const canvas = el('div', { class: 'graph-canvas', 'data-testid': 'graph-canvas', role: 'img', 'aria-label': 'Graph' });
  const details = el('aside', { class: 'graph-details', 'data-testid': 'graph-details', 'aria-live': 'polite' },
    el('p', { class: 'muted' }, 'Click a node to see it here.'));
  const analysis = el('div', {}, el('p', { class: 'muted' }, 'Loading…'));
  const cycles = el('div', {}, el('p', { class: 'muted' }, 'Loading…'));

  const form = el('form', { class: 'toolbar', onsubmit: (e) => {
    e.preventDefault();
    go({ focus: focus.value.trim() });
  } }, focus, depth, dir, asof, rels, size, show, whole, count, showAll);
  root.append(
    el('h1', {}, 'Graph', ctx.ns ? el('span', { class: 'muted' }, ' of ' + ctx.ns) : null),
    form,
    el('div', { class: 'graph-layout' }, canvas, details),
    el('div', { class: 'columns' },
      section('Analysis', 'graph-analysis', analysis),
      section('Cycles', 'graph-cycles', cycles)));

  // go keeps the form in the URL and draws again.
  const go = (change) => {
    const u = new URLSearchParams();
    const fc = change.focus !== undefined ? change.focus : focus.value.trim();
    if (fc) u.set('focus', fc);
    u.set('depth', depth.value);
    if (dir.value !== 'both') u.set('dir', dir.value);
    const checked = relBoxes.filter((b) => b.checked).map((b) => b.value);
    if (checked.length) u.set('rels', checked.join(','));
    if (asof.value) u.set('asof', asof.value);
    const sz = change.size !== undefined ? change.size : size.value;
    if (sz) u.set('size', sz);
    if (f.render) u.set('render', f.render);
    ctx.navigate('/graph?' + u.toString());
  };
  whole.addEventListener('click', () => go({ focus: '' }));

  let cy = null;
  ctx.onLeave(() => {
    if (cy) cy.destroy();
    cy = null;
  });

  loadAnalysis(analysis, ctx);
  loadCycles(cycles, ctx);

  let data;
  count.textContent = 'Loading…';
  try {
    if (f.focus) data = await neighbourhood(ctx, f);
    else if (f.size) data = await namespaceGraph(ctx, Number(f.size) || 500);
    else data = await overview(ctx);
  } catch (e) {
    failure(canvas, e);
    count.textContent = '';
    count.dataset.error = e.message;
    return;
  }
  const cytoscape = await loadCytoscape();
  if (!canvas.isConnected) return; // left while loading
  // the words are on screen before the drawing holds the page
  count.textContent = 'Drawing ' + data.nodes.length + ' nodes…';
  await nextFrame();
  if (!canvas.isConnected) return;
  const t0 = performance.now();
  const big = data.nodes.length > FORCE_MAX;
  const webgl = f.render === 'webgl' || (f.render !== 'canvas' && big && hasWebGL2());
  const clustered = !!data.pool; // the overview colours its clusters
  let layoutMs;
  ({ cy, layoutMs } = draw(cytoscape, canvas, data, f.focus, webgl, clustered));
  await nextFrame();
  if (!cy) return; // left while drawing
  count.dataset.renderMs = String(Math.round(performance.now() - t0));
  count.dataset.layoutMs = String(Math.round(layoutMs));
  count.dataset.render = webgl ? 'webgl' : 'canvas';
  count.textContent = data.nodes.length + ' nodes, ' + data.edges.length + ' edges' + (data.capped ? ' (capped)' : '');
  count.dataset.nodes = String(data.nodes.length);
  count.dataset.edges = String(data.edges.length);
  count.dataset.view = f.focus ? 'focus' : f.size ? 'all' : 'overview';
  if (data.pool && !data.whole) {
    // the overview: what it shows of how many, and the rest a click away
    const { memories, capped } = data.pool;
    count.textContent = data.nodes.length + ' nodes, ' + data.edges.length + ' edges: the most connected of ' +
      (capped ? 'the newest ' : '') + memories + ' memories, with their neighbours';
    showAll.textContent = capped ? 'Show the newest ' + memories + ' memories' : 'Show all ' + memories + ' memories';
    showAll.hidden = false;
    showAll.addEventListener('click', () => go({ focus: '', size: String(memories) }));
  }
  // A change of theme recolours the graph.
  const recolour = () => setTimeout(() => {
    if (!cy) return;
    if (webgl) paintBackground(canvas);
    cy.style(graphStyle(big, clustered ? maxDegree(cy) : null));
  }, 0);
  const dark = window.matchMedia('(prefers-color-scheme: dark)');
  const picker = document.getElementById('theme-picker');
  dark.addEventListener('change', recolour);
  if (picker) picker.addEventListener('change', recolour);
  ctx.onLeave(() => {
    dark.removeEventListener('change', recolour);
    if (picker) picker.removeEventListener('change', recolour);
  });
  cy.on('tap', 'node', (e) => showDetails(details, e.target.data(), data, go));
  cy.on('tap', 'edge', (e) => showEdge(details, e.target.data()));
  if (f.focus) {
    const start = cy.getElementById(f.focus);
    if (start.nonempty()) showDetails(details, start.data(), data, go);
  }

  // Live: an edge at a node on the page, or a change of a memory shown,
  // draws again (once for a burst).
  const redraw = debounce(() => go({}), 800);
  ctx.onLeave(() => redraw.cancel()); // else it navigates back here from the next page
  ctx.events.on('edge', (ev) => {
    if (!cy) return;
    if (cy.getElementById(ev.from || '').nonempty() || cy.getElementById(ev.to || '').nonempty()) redraw();
  });
  ctx.events.on('memory', (ev) => {
    if (!cy) return;
    const n = cy.getElementById(ev.id || '');
    if (n.nonempty()) {
      if (ev.change === 'deleted') redraw();
      else if (ev.title) n.data('label', clip(ev.title, big ? BIG_LABEL : 40));
    } else if (!f.focus && (!ctx.ns || ev.namespace === ctx.ns) && ev.change === 'created') {
      redraw();
    }
  });
}

// neighbourhood walks the graph from f.focus (POST /v1/traverse).
async function neighbourhood(ctx, f) {
  const req = { start: f.focus, depth: Number(f.depth) || 1, direction: f.dir };
  if (f.rels.length) req.rels = f.rels;
  if (f.asof) req.as_of = new Date(f.asof + 'T23:59:59Z').toISOString();
  const res = await ctx.api('POST', '/v1/traverse', req);
  const nodes = (res.nodes || []).map((n) => nodeOf(n.id, n.memory, n.depth));
  if (!nodes.some((n) => n.id === f.focus) && nodes.length) {
    // the start is named by a prefix: mark the node at depth 0
    const first = nodes.find((n) => n.depth === 0);
    if (first) f.focus = first.id;
  }
  return { nodes, edges: res.edges || [], capped: nodes.length >= 1000 };
}

// namespaceGraph is a namespace's newest live memories, the edges
// between them and the artefacts they touch, up to limit nodes; capped
// when the namespace has more memories.
async function namespaceGraph(ctx, limit) {
  const mems = await newest(ctx, limit + 1);
  const capped = mems.length > limit;
  mems.length = Math.min(mems.length, limit);
  const nodes = mems.map((m) => nodeOf(m.id, m, undefined));
  if (!nodes.length) return { nodes, edges: [], capped: false };
  const edges = await ctx.api('POST', '/v1/edges/list', { endpoints: nodes.map((n) => n.id) }) || [];
  const have = new Set(nodes.map((n) => n.id));
  const kept = [];
  for (const e of edges) {
    for (const end of [e.from, e.to]) {
      if (!have.has(end) && nodes.length < limit && !end.startsWith('m-')) {
        have.add(end);
        nodes.push(nodeOf(end, null, undefined));
      }
    }
    if (have.has(e.from) && have.has(e.to)) kept.push(e);
  }
  return { nodes, edges: dedupe(kept), capped };
}

// overview is the namespace's most connected memories among its newest
// POOL, each with its most connected neighbours, and the edges between
// them; pool says how many memories it was chosen from, whole that it is
// all of them (a namespace that small is shown whole, with no button).
async function overview(ctx) {
  const data = await namespaceGraph(ctx, POOL);
  const pool = { memories: data.nodes.filter((n) => n.memory).length, capped: data.capped };
  if (data.nodes.length <= OVERVIEW_MAX) return { ...data, pool, whole: true };
  return { ...mostConnected(data), pool, whole: false };
}

// mostConnected keeps, in order of degree, each node with its
// OVERVIEW_NEIGHBOURS most connected neighbours, up to OVERVIEW_MAX
// nodes, and the edges between those; with no edge at all, the first
// OVERVIEW_MAX nodes (the newest).
function mostConnected(data) {
  const adj = new Map(data.nodes.map((n) => [n.id, new Set()]));
  for (const e of data.edges) {
    adj.get(e.from).add(e.to);
    adj.get(e.to).add(e.from);
  }
  const deg = (id) => adj.get(id).size;
  const byDegree = (a, b) => deg(b) - deg(a) || (a < b ? -1 : a > b ? 1 : 0);
  const keep = new Set();
  for (const id of [...adj.keys()].filter((id) => deg(id) > 0).sort(byDegree)) {
    if (keep.size >= OVERVIEW_MAX) break;
    keep.add(id);
    const near = [...adj.get(id)].filter((x) => !keep.has(x)).sort(byDegree).slice(0, OVERVIEW_NEIGHBOURS);
    for (const x of near) if (keep.size < OVERVIEW_MAX) keep.add(x);
  }
  if (!keep.size) return { nodes: data.nodes.slice(0, OVERVIEW_MAX), edges: [], capped: false };
  return {
    nodes: data.nodes.filter((n) => keep.has(n.id)),
    edges: data.edges.filter((e) => keep.has(e.from) && keep.has(e.to)),
    capped: false,
  };
}

// clusters finds the graph's clusters by label propagation (each node
// takes the label most of its neighbours have, a fixed number of rounds,
// in a fixed order) and returns each node's cluster, numbered from the
// largest: 0 to CLUSTER_COLOURS - 1, or CLUSTER_COLOURS for the rest.
function clusters(nodes, edges) {
  const adj = new Map(nodes.map((n) => [n.id, []]));
  for (const e of edges) {
    adj.get(e.source).push(e.target);
    adj.get(e.target).push(e.source);
  }
  const label = new Map(nodes.map((n) => [n.id, n.id]));
  const order = nodes.map((n) => n.id).sort((a, b) => adj.get(b).length - adj.get(a).length || (a < b ? -1 : 1));
  for (let round = 0; round < 10; round++) {
    let moved = false;
    for (const id of order) {
      const votes = new Map();
      for (const x of adj.get(id)) votes.set(label.get(x), (votes.get(label.get(x)) || 0) + 1);
      let best = label.get(id), most = votes.get(best) || 0;
      for (const [l, v] of votes) if (v > most || (v === most && l < best)) [best, most] = [l, v];
      if (best !== label.get(id)) {
        label.set(id, best);
        moved = true;
      }
    }
    if (!moved) break;
  }
  const size = new Map();
  for (const l of label.values()) size.set(l, (size.get(l) || 0) + 1);
  const rank = new Map([...size.keys()].sort((a, b) => size.get(b) - size.get(a) || (a < b ? -1 : 1)).map((l, i) => [l, i]));
  return new Map([...label].map(([id, l]) => [id, size.get(l) > 1 ? Math.min(rank.get(l), CLUSTER_COLOURS) : CLUSTER_COLOURS]));
}

// newest lists up to limit live memories of the namespace, newest first,
// in pages of the list's largest (1,000).
async function newest(ctx, limit) {
  const byId = new Map();
  let until = '';
  while (byId.size < limit) {
    const u = new URLSearchParams({ limit: String(Math.min(PAGE, limit - byId.size + 1)) });
    if (ctx.ns) u.set('ns', ctx.ns);
    u.append('status', 'active');
    u.append('status', 'stale');
    if (until) u.set('until', until);
    const page = (await ctx.api('GET', '/v1/memories?' + u.toString())) || [];
    const before = byId.size;
    for (const m of page) if (byId.size < limit) byId.set(m.id, m);
    if (!page.length || byId.size === before) break;
    // just after the page's oldest update, so that none at that instant
    // is skipped (those already here are left out)
    until = new Date(new Date(page[page.length - 1].provenance.updated_at).getTime() + 1).toISOString();
  }
  return [...byId.values()];
}

function dedupe(edges) {
  const seen = new Set();
  return edges.filter((e) => !seen.has(e.id) && seen.add(e.id));
}

function nodeOf(id, memory, depth) {
  const kind = memory ? 'memory' : id.split(':')[0];
  const label = memory ? (memory.title || memory.content || id) : id.replace(/^(file|code|url):/, '');
  return { id, depth, memory, kind, label: clip(label, 40), status: memory ? memory.status : '' };
}

function nextFrame() {
  return new Promise((r) => requestAnimationFrame(() => r()));
}

let webgl2 = null;
// hasWebGL2 says whether the browser draws WebGL 2 on a GPU (asked once).
// Drawn in software (SwiftShader, llvmpipe), WebGL is many times slower
// than a canvas: a context that the browser says has a major performance
// caveat, or whose renderer names a software one, does not count
// (Chromium gives SwiftShader without the caveat).
function hasWebGL2() {
  if (webgl2 === null) {
    try {
      const gl = document.createElement('canvas').getContext('webgl2', { failIfMajorPerformanceCaveat: true });
      webgl2 = !!gl && !SOFTWARE_GL.test(glRenderer(gl));
      if (gl) gl.getExtension('WEBGL_lose_context')?.loseContext();
    } catch {
      webgl2 = false;
    }
  }
  return webgl2;
}

// SOFTWARE_GL matches the renderers that draw WebGL on the CPU.
const SOFTWARE_GL = /swiftshader|llvmpipe|softpipe|software|basic render/i;

// glRenderer names the GPU (or the software) behind gl, when the browser
// says.
function glRenderer(gl) {
  const info = gl.getExtension('WEBGL_debug_renderer_info');
  return String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER) || '');
}

// spiral places the nodes of order on a sunflower (Vogel's spiral): the
// first in the centre, each next a golden angle further round and farther
// out, so that the nodes fill a disc evenly without overlapping, in
// linear time.
function spiral(order) {
  const golden = Math.PI * (3 - Math.sqrt(5));
  const at = new Map();
  order.forEach((id, i) => {
    const r = SPIRAL_GAP * Math.sqrt(i);
    at.set(id, { x: r * Math.cos(i * golden), y: r * Math.sin(i * golden) });
  });
  return at;
}

// paintBackground sets the container's background colour, from the
// theme, on the element itself: Cytoscape's WebGL mode reads it there.
function paintBackground(container) {
  container.style.backgroundColor = '';
  container.style.backgroundColor = getComputedStyle(container).backgroundColor;
}

// spiralViewport is the zoom and pan that fit a spiral of n nodes in the
// container, its centre in the middle.
function spiralViewport(container, n) {
  const w = container.clientWidth || 800;
  const h = container.clientHeight || 600;
  const radius = SPIRAL_GAP * Math.sqrt(Math.max(n - 1, 1)) + BIG_NODE; // the last node whole
  return { zoom: Math.min(w, h) / (2 * radius), pan: { x: w / 2, y: h / 2 } };
}

// draw lays the graph out on the canvas, coloured by the theme, and
// returns Cytoscape's instance and the layout's milliseconds. A large
// graph is placed on a spiral (the start, then by hops, or the most
// connected first), a small one by a force-directed layout.
function draw(cytoscape, container, data, focusId, webgl, clustered) {
  const degree = new Map();
  for (const e of data.edges) {
    degree.set(e.from, (degree.get(e.from) || 0) + 1);
    degree.set(e.to, (degree.get(e.to) || 0) + 1);
  }
  const big = data.nodes.length > FORCE_MAX;
  const t0 = performance.now();
  let at = null;
  if (big) {
    const hops = (n) => (n.depth === undefined ? 0 : n.depth);
    const order = data.nodes.slice().sort((a, b) => hops(a) - hops(b) || (degree.get(b.id) || 0) - (degree.get(a.id) || 0));
    at = spiral(order.map((n) => n.id));
  }
  let layoutMs = performance.now() - t0;
  const elements = [];
  for (const n of data.nodes) {
    const label = big ? clip(n.label, BIG_LABEL) : n.label;
    elements.push({ group: 'nodes', data: { id: n.id, label, kind: n.kind, status: n.status, depth: n.depth, degree: degree.get(n.id) || 0 }, position: at ? at.get(n.id) : undefined });
  }
  const present = new Set(data.nodes.map((n) => n.id));
  for (const e of data.edges) {
    if (!present.has(e.from) || !present.has(e.to)) continue;
    elements.push({ group: 'edges', data: { id: e.id || e.from + ' ' + e.rel + ' ' + e.to, source: e.from, target: e.to, rel: e.rel, edge: e } });
  }
  if (clustered) {
    const of = (group) => elements.filter((x) => x.group === group).map((x) => x.data);
    const cluster = clusters(of('nodes'), of('edges'));
    for (const x of of('nodes')) x.cluster = cluster.get(x.id);
  }
  if (webgl) paintBackground(container);
  // The spiral fits the canvas at a zoom known from its radius: asking
  // Cytoscape to fit it would measure every label first.
  const viewport = big ? spiralViewport(container, data.nodes.length) : {};
  const cy = cytoscape({
    container,
    elements,
    ...viewport,
    layout: big ? { name: 'preset', fit: false } : { name: 'null' },
    minZoom: 0.05,
    maxZoom: 4,
    boxSelectionEnabled: false,
    // A canvas redraws every element at each frame of a pan or zoom
    // unless it moves a snapshot (textureOnViewport) without the edges;
    // WebGL draws them all each frame.
    hideEdgesOnViewport: big && !webgl,
    textureOnViewport: big && !webgl,
    pixelRatio: big ? 1 : 'auto',
    renderer: { name: 'canvas', webgl },
    style: graphStyle(big, clustered ? Math.max(0, ...degree.values()) : null),
  });
  if (!big) {
    const t1 = performance.now();
    // the overview packs its clusters closer, for its labels to be read
    // with the whole in view
    const spread = clustered ? { nodeRepulsion: () => 6000, idealEdgeLength: () => 60, componentSpacing: 20, nodeOverlap: 20, gravity: 2 }
      : { nodeRepulsion: () => 8000, idealEdgeLength: () => 60 };
    cy.layout({ name: 'cose', animate: false, fit: true, randomize: true, numIter: 600, ...spread }).run();
    if (clustered) fitOverview(cy, container);
    layoutMs += performance.now() - t1;
  }
  if (focusId) cy.getElementById(focusId).addClass('start');
  if (cy.zoom() > MAX_FIT_ZOOM) {
    cy.zoom(MAX_FIT_ZOOM);
    cy.center();
  }
  if (big && webgl) {
    // WebGL draws labels at every zoom: they are taken off below
    // LABEL_ZOOM, once as the zoom crosses it (a style change of every
    // node), never at each frame
    const nodes = cy.nodes();
    let labelled = true;
    const label = () => {
      const on = cy.zoom() >= LABEL_ZOOM;
      if (on === labelled) return;
      labelled = on;
      cy.batch(() => (on ? nodes.removeClass('unlabelled') : nodes.addClass('unlabelled')));
    };
    label();
    cy.on('zoom', debounce(label, 100));
  }
  return { cy, layoutMs };
}

// fitOverview stretches a layout wider than the container down to the
// container's proportions, and fits it again: the space below is the
// labels' (wider than tall, they collide less the farther apart the rows);
// then zooms in if the labels would not be drawn.
function fitOverview(cy, container) {
  const bb = cy.nodes().boundingBox();
  const w = container.clientWidth || 800;
  const h = container.clientHeight || 600;
  const k = (bb.w / Math.max(bb.h, 1)) / (w / h);
  if (k > 1.05) {
    const mid = bb.y1 + bb.h / 2;
    cy.nodes().positions((n) => ({ x: n.position('x'), y: mid + (n.position('y') - mid) * k }));
    cy.fit(undefined, 30);
  }
  if (cy.zoom() < OVERVIEW_MIN_FONT / OVERVIEW_FONT) {
    cy.zoom(OVERVIEW_MIN_FONT / OVERVIEW_FONT);
    cy.center();
  }
}

// maxDegree is the largest degree of cy's nodes.
function maxDegree(cy) {
  return cy.nodes().reduce((m, n) => Math.max(m, n.data('degree')), 0);
}

// graphStyle is the graph's style in the theme's colours; an overview
// (maxDeg: its nodes' largest degree, else null) colours its clusters,
// sizes its nodes by degree and labels them all.
function graphStyle(big, maxDeg) {
  // The theme's colours are light-dark() pairs, which Cytoscape does not
  // read: an element coloured with each gives the colour in use.
  const probe = document.createElement('span');
  document.body.append(probe);
  const c = (name, dflt) => {
    probe.style.color = dflt;
    probe.style.color = 'var(' + name + ')';
    return getComputedStyle(probe).color || dflt;
  };
  const fg = c('--fg', '#1d2128');
  const muted = c('--muted', '#5d6673');
  const line = c('--line', '#d9dde3');
  const accent = c('--accent', '#2456c9');
  const danger = c('--danger', '#b3261e');
  const warn = c('--warn', '#9a6700');
  const ok = c('--ok', '#1e7d3a');
  const bg = c('--bg2', '#f4f6f8');
  probe.remove();
  const overview = maxDeg === null ? null : overviewStyle(maxDeg, { fg, muted, bg });
  return [
    { selector: 'node', style: {
      'background-color': accent, width: big ? BIG_NODE : 12, height: big ? BIG_NODE : 12, label: 'data(label)', color: fg,
      'font-size': 9, 'text-valign': 'bottom', 'text-margin-y': 2, 'min-zoomed-font-size': 7,
      'text-max-width': 120, 'text-wrap': big ? 'none' : 'ellipsis',
    } },
    ...(overview ? overview.nodes : []),
    // on a large graph drawn with WebGL, labels show once zoomed in
    { selector: 'node.unlabelled', style: { label: '' } },
    { selector: 'node[kind != "memory"]', style: { shape: 'round-rectangle', 'background-color': ok } },
    { selector: 'node[status = "stale"]', style: { 'background-color': warn } },
    { selector: 'node.start', style: { width: 20, height: 20, 'border-width': 3, 'border-color': fg } },
    { selector: 'node:selected', style: { 'border-width': 3, 'border-color': danger } },
    { selector: 'edge', style: {
      width: 1, 'line-color': line, 'curve-style': big ? 'haystack' : 'bezier',
      'target-arrow-shape': big ? 'none' : 'triangle', 'target-arrow-color': line,
      label: big ? '' : 'data(rel)', 'font-size': 7, color: muted, 'min-zoomed-font-size': 8,
      'text-rotation': 'autorotate',
    } },
    ...(overview ? overview.edges : []),
    { selector: 'edge[rel = "contradicts"]', style: { 'line-color': danger, 'target-arrow-color': danger } },
    { selector: 'edge[rel = "supersedes"]', style: { 'line-style': 'dashed' } },
  ];
}

// CLUSTER_PALETTE colours the overview's clusters, largest first (read on
// a light and a dark background); the rest are grey.
const CLUSTER_PALETTE = ['#2f6fdb', '#d9822b', '#2e9e5b', '#c2417a', '#8a5cd1', '#1f9bb0', '#b8962e', '#d2533f'];

// overviewStyle is what the overview adds to the rules of nodes and of
// edges: nodes sized by degree (up to maxDeg) and coloured by cluster,
// every label drawn on a backing so that it reads over the edges, the
// most connected labelled larger; edges darker.
function overviewStyle(maxDeg, { fg, muted, bg }) {
  const top = Math.max(maxDeg, 1);
  const nodes = [
    { selector: 'node', style: {
      width: 'mapData(degree, 0, ' + top + ', 10, 34)', height: 'mapData(degree, 0, ' + top + ', 10, 34)',
      'background-color': '#8a93a0', 'font-size': OVERVIEW_FONT, 'min-zoomed-font-size': OVERVIEW_MIN_FONT, color: fg,
      'text-max-width': 110, 'text-wrap': 'ellipsis',
      'text-background-color': bg, 'text-background-opacity': 0.75, 'text-background-padding': 1, 'text-background-shape': 'roundrectangle',
    } },
    ...CLUSTER_PALETTE.map((colour, i) => ({ selector: 'node[cluster = ' + i + ']', style: { 'background-color': colour } })),
    { selector: 'node[degree >= ' + Math.max(2, Math.ceil(top / 2)) + ']', style: { 'font-size': 14, 'font-weight': 'bold', 'text-max-width': 160, 'z-index': 2 } },
  ];
  const edges = [{ selector: 'edge', style: { 'line-color': muted, 'line-opacity': 0.45, 'target-arrow-color': muted, 'arrow-scale': 0.6 } }];
  return { nodes, edges };
}

// showDetails fills the side panel with the node (text only).
function showDetails(box, d, data, go) {
  const n = data.nodes.find((x) => x.id === d.id);
  const m = n && n.memory;
  const rows = [];
  const row = (k, v) => rows.push(el('dt', {}, k), el('dd', {}, v));
  row('id', el('span', { class: 'mono' }, d.id));
  if (m) {
    row('kind', m.kind || '');
    row('status', m.status || '');
    row('namespace', m.namespace || '');
    if (m.provenance) row('device', short(m.provenance.device, 12));
  }
  if (d.depth !== undefined) row('hops', String(d.depth));
  const edges = data.edges.filter((e) => e.from === d.id || e.to === d.id);
  clear(box).append(
    el('h2', {}, m ? (m.title || clip(m.content, 60)) : d.id),
    el('dl', { class: 'props' }, rows),
    m ? el('pre', { class: 'content' }, cut(m.content, 600)) : null,
    el('div', { class: 'actions' },
      m ? el('a', { href: '/memories/' + encodeURIComponent(d.id), 'data-testid': 'graph-open-memory' }, 'Open memory') : null,
      el('button', { type: 'button', onclick: () => go({ focus: d.id }) }, 'Focus here')),
    edges.length ? el('h3', {}, edges.length + ' edges') : null,
    edges.length ? el('ul', { class: 'plain' }, edges.slice(0, 100).map((e) => el('li', {},
      e.from === d.id ? '→ ' + e.rel + ' ' : '← ' + e.rel + ' ',
      memoryLink(e.from === d.id ? e.to : e.from, label(data, e.from === d.id ? e.to : e.from))))) : null);
}

function showEdge(box, d) {
  const e = d.edge;
  const rows = [];
  const row = (k, v) => rows.push(el('dt', {}, k), el('dd', {}, v));
  row('from', memoryLink(e.from));
  row('relation', e.rel);
  row('to', memoryLink(e.to));
  row('origin', e.origin || '');
  row('strength', String(e.strength));
  if (e.valid_from) row('valid from', e.valid_from);
  if (e.valid_to) row('valid to', e.valid_to);
  if (e.notes) row('notes', e.notes);
  clear(box).append(el('h2', {}, 'Edge'), el('dl', { class: 'props' }, rows));
}

function label(data, id) {
  const n = data.nodes.find((x) => x.id === id);
  return n ? n.label : id;
}

// loadAnalysis fills the analysis block (POST /v1/analyze). An analysis
// is of one namespace: with all namespaces shown, the block analyses the
// only one there is, or asks which.
async function loadAnalysis(box, ctx) {
  if (ctx.ns) {
    analyse(box, ctx, ctx.ns);
    return;
  }
  let names;
  try {
    names = await namespaceCounts(ctx);
  } catch (e) {
    failure(box, e);
    return;
  }
  if (names.length <= 1) {
    analyse(box, ctx, names.length ? names[0].name : '');
    return;
  }
  const body = el('div', {});
  const pick = el('select', { 'aria-label': 'Namespace to analyse', 'data-testid': 'graph-analysis-ns' },
    el('option', { value: '' }, 'pick one…'),
    names.map((ns) => el('option', { value: ns.name }, ns.name + ' (' + ns.count + ')')));
  pick.addEventListener('change', () => (pick.value ? analyse(body, ctx, pick.value) : clear(body)));
  clear(box).append(
    el('p', { class: 'muted' }, 'An analysis is of one namespace; ' + names.length + ' are shown.'),
    el('label', {}, 'Analyse ', pick),
    body);
}

// analyse fills box with the analysis of the namespace ns.
async function analyse(box, ctx, ns) {
  clear(box).append(el('p', { class: 'muted' }, 'Loading…'));
  let a;
  try {
    a = await ctx.api('POST', '/v1/analyze', { namespace: ns, limit: 15 });
  } catch (e) {
    failure(box, e);
    return;
  }
  // Ranked entries link to their neighbourhood; gaps, which have none, to
  // their memory.
  const list = (title, testid, items, empty, score) => el('div', { 'data-testid': testid },
    el('h3', {}, title),
    items && items.length
      ? el('ol', { class: 'plain ranked' }, items.map((r) => el('li', {},
        score ? el('a', { href: '/graph?focus=' + encodeURIComponent(r.id), title: r.id }, clip(r.title || r.id, 70)) : memoryLink(r.id, r.title),
        score ? el('span', { class: 'muted' }, ' ' + score(r.score)) : null)))
      : el('p', { class: 'muted' }, empty));
  clear(box).append(
    el('p', {}, a.memories + ' memories, ' + a.edges + ' edges' + (a.namespace ? ' in ' + a.namespace : '') + '.'),
    list('Most connected', 'graph-god-nodes', a.god_nodes, 'No edges yet.', (s) => (s === 1 ? '1 edge' : s + ' edges')),
    list('Bridges', 'graph-bridges', a.bridges, !a.edges || a.bridges ? 'None.' : 'Not ranked: the graph is too large.', (s) => s.toFixed(3)),
    list('Gaps (no edge at all)' + (a.gap_count ? ': ' + a.gap_count : ''), 'graph-gaps', a.gaps, 'Every memory has an edge.', null));
}

// loadCycles fills the cycles block (GET /v1/doctor).
async function loadCycles(box, ctx) {
  let rep;
  try {
    rep = await ctx.api('GET', '/v1/doctor');
  } catch (e) {
    failure(box, e);
    return;
  }
  const cycles = rep.cycles || [];
  clear(box).append(cycles.length
    ? el('ul', { class: 'plain' }, cycles.map((c) => el('li', {},
      el('span', { class: 'badge stale' }, c.rel), ' ',
      c.members.map((m, i) => [i ? ' · ' : '', el('a', { href: '/graph?focus=' + encodeURIComponent(m) + '&depth=' + Math.min(5, c.members.length) + '&rels=' + c.rel, class: 'mono', title: m }, clip(m, 30))]))))
    : el('p', { class: 'muted' }, 'No cycles in acyclic relations.'));
}
