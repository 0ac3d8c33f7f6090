// memories.js: the memory list (search as you type, filters, paging, live
// arrivals) and a memory's page (content, revisions, provenance, edges,
// staleness, actions).
import { el, clear, ago, short, linkedText } from './api.js';

const PAGE = 100;
const STATUSES = ['active', 'stale', 'archived', 'compacted', 'deleted'];
const TIERS = ['human', 'agent', 'auto'];
const RELS = ['related_to', 'supersedes', 'contradicts', 'depends_on', 'specializes', 'part_of', 'alternative_to', 'builds_on', 'caused_by', 'led_to', 'touches'];
const SINCE = [['', 'any time'], ['1', 'last 24 h'], ['7', 'last 7 days'], ['30', 'last 30 days'], ['365', 'last year']];

export async function render(root, params, ctx) {
  if (params.id) return renderMemory(root, decodeURIComponent(params.id), ctx);
  return renderList(root, params.query, ctx);
}

// ---- the list ----

async function renderList(root, query, ctx) {
  const f = {
    q: query.get('q') || '',
    kind: query.get('kind') || '',
    tier: query.get('tier') || '',
    status: query.get('status') || '',
    device: query.get('device') || '',
    since: query.get('since') || '',
  };
  const search = el('input', { type: 'search', placeholder: 'Search memories  ( / )', value: f.q, 'data-search': '', 'aria-label': 'Search', autocomplete: 'off', spellcheck: false });
  const kind = el('input', { type: 'text', placeholder: 'kind', value: f.kind, 'aria-label': 'Kind', size: 10 });
  const tier = select('Tier', [['', 'any tier'], ...TIERS.map((t) => [t, t])], f.tier);
  const status = select('Status', [['', 'active or stale'], ...STATUSES.map((s) => [s, s])], f.status);
  const device = el('input', { type: 'text', placeholder: 'device', value: f.device, 'aria-label': 'Device', size: 10 });
  const since = select('Updated', SINCE, f.since);
  const count = el('span', { class: 'muted', 'aria-live': 'polite' });
  const list = el('ul', { class: 'list', id: 'memory-list' });
  const more = el('button', { type: 'button', hidden: true }, 'Load more');
  root.append(
    el('h1', {}, 'Memories', ctx.ns ? el('span', { class: 'muted' }, ' in ' + ctx.ns) : null),
    el('div', { class: 'toolbar' }, search, kind, tier, status, device, since),
    el('div', { class: 'toolbar' }, count),
    list,
    el('div', { class: 'actions' }, more));

  const shown = new Map(); // id -> li
  let items = [];
  let seq = 0;
  let cursor = null; // the server's cursor of the next page; null: no more
  let names = null; // device name -> id, for live arrivals under a device filter

  const read = () => {
    f.q = search.value.trim();
    f.kind = kind.value.trim();
    f.tier = tier.value;
    f.status = status.value;
    f.device = device.value.trim();
    f.since = since.value;
  };
  const sinceTime = () => (f.since ? new Date(Date.now() - Number(f.since) * 86400e3).toISOString() : '');
  const statuses = () => (f.status ? [f.status] : ['active', 'stale']);
  const keepURL = () => {
    const u = new URLSearchParams();
    for (const [k, v] of Object.entries(f)) if (v) u.set(k, v);
    const s = u.toString();
    history.replaceState(null, '', '/memories' + (s ? '?' + s : ''));
  };
  // The server filters by device (an id, a prefix of one, or a name);
  // a memory that arrives live is checked here against the same.
  const byDevice = async (m) => {
    if (!f.device) return true;
    if (names === null) {
      const devices = await ctx.api('GET', '/v1/mesh/devices').catch(() => []);
      names = new Map((devices || []).filter((d) => d.name).map((d) => [d.name, d.key]));
    }
    const want = f.device.toUpperCase();
    return devicesOf(m).some((d) => d.toUpperCase().startsWith(want) || d === names.get(f.device));
  };

  async function load(append) {
    const my = ++seq;
    let got;
    try {
      if (f.q) {
        const res = await ctx.api('POST', '/v1/search', {
          query: f.q, namespace: ctx.ns || undefined, kind: f.kind || undefined,
          statuses: statuses(), tiers: f.tier ? [f.tier] : undefined,
          device: f.device || undefined, since: sinceTime() || undefined, limit: 50,
        });
        got = res.results || [];
      } else {
        const u = new URLSearchParams({ limit: String(PAGE) });
        if (ctx.ns) u.set('ns', ctx.ns);
        if (f.kind) u.set('kind', f.kind);
        if (f.tier) u.set('tier', f.tier);
        if (f.device) u.set('device', f.device);
        for (const s of statuses()) u.append('status', s);
        if (sinceTime()) u.set('since', sinceTime());
        if (append && cursor) u.set('cursor', cursor);
        got = await ctx.api('GET', '/v1/memories?' + u.toString());
      }
    } catch (e) {
      if (my === seq) count.textContent = 'Error: ' + e.message;
      return;
    }
    if (my !== seq) return; // a newer query answered first
    if (!append) {
      items = [];
      shown.clear();
      clear(list);
    }
    cursor = (!f.q && got.next) || null;
    for (const m of got.filter((m) => !shown.has(m.id))) {
      items.push(m);
      const li = row(m);
      shown.set(m.id, li);
      list.append(li);
    }
    more.hidden = cursor === null;
    count.textContent = f.q
      ? items.length + ' matching'
      : items.length + (cursor ? '+' : '') + ' memories, newest first';
  }

  let timer = 0;
  const changed = () => {
    read();
    keepURL();
    clearTimeout(timer);
    timer = setTimeout(() => load(false), 120);
  };
  for (const input of [search, kind, device]) input.addEventListener('input', changed);
  for (const s of [tier, status, since]) s.addEventListener('change', changed);
  search.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && items.length) ctx.navigate('/memories/' + items[0].id);
  });
  more.addEventListener('click', () => load(true));
  ctx.onLeave(() => clearTimeout(timer));
  ctx.events.on('resync', () => load(false)); // missed while the stream was down

  // Live: a memory created, changed or merged that this view shows goes to
  // the top; one that no longer fits leaves.
  ctx.events.on('memory', async (ev) => {
    const li = shown.get(ev.id);
    if (ev.change === 'deleted' && li && !statuses().includes('deleted')) {
      li.remove();
      shown.delete(ev.id);
      items = items.filter((m) => m.id !== ev.id);
      return;
    }
    if (f.q) return; // search results keep their ranking
    if (ctx.ns && ev.namespace !== ctx.ns) return;
    if (f.kind && ev.kind !== f.kind) return;
    if (!statuses().includes(ev.status)) return;
    let m;
    try {
      m = await ctx.api('GET', '/v1/memories/' + encodeURIComponent(ev.id));
    } catch {
      return;
    }
    if ((f.tier && m.tier !== f.tier) || !(await byDevice(m))) return;
    const fresh = row(m);
    fresh.classList.add('fresh');
    if (li) li.remove();
    items = [m, ...items.filter((x) => x.id !== m.id)];
    shown.set(m.id, fresh);
    list.prepend(fresh);
  });

  search.focus();
  await load(false);
}

function devicesOf(m) {
  const ds = new Set([m.provenance && m.provenance.device]);
  for (const r of m.revisions || []) ds.add(r.device);
  return [...ds].filter(Boolean);
}

function select(label, options, value) {
  return el('select', { 'aria-label': label }, options.map(([v, t]) => el('option', { value: v, selected: v === value }, t)));
}

function title(m) {
  if (m.title) return m.title;
  const line = String(m.content || '').split('\n').find((l) => l.trim()) || '(empty)';
  return line.length > 120 ? line.slice(0, 120) + '…' : line;
}

function row(m) {
  return el('li', { 'data-id': m.id },
    el('a', { href: '/memories/' + encodeURIComponent(m.id) },
      el('div', { class: 'title' }, title(m)),
      m.title ? el('div', { class: 'snippet' }, String(m.content || '').slice(0, 300)) : null,
      el('div', { class: 'meta' },
        el('span', { class: 'badge ' + m.status }, m.status),
        el('span', {}, m.kind),
        el('span', {}, m.tier),
        el('span', {}, m.namespace),
        el('span', { class: 'mono', title: 'device' }, short(m.provenance && m.provenance.device)),
        el('span', { title: m.provenance && m.provenance.updated_at }, ago(m.provenance && m.provenance.updated_at)),
        el('span', { class: 'mono' }, m.short_id))));
}

// ---- one memory ----

async function renderMemory(root, id, ctx) {
  const view = el('div', {});
  root.append(el('p', {}, el('a', { href: '/memories' }, '← Memories')), view);
  let current = null;
  let editing = false;
  let purging = false; // the memory's own changes then announce its end: not reloaded

  async function load() {
    let m;
    try {
      m = await ctx.api('GET', '/v1/memories/' + encodeURIComponent(id));
    } catch (e) {
      clear(view).append(el('h1', {}, 'Memory ' + id), el('p', { class: 'error' }, e.message));
      return;
    }
    current = m;
    if (!editing) show(m);
  }

  function show(m) {
    const content = el('pre', { class: 'content', id: 'memory-content' }, linkedText(m.content || ''));
    const side = el('aside', {},
      el('h2', {}, 'Provenance'),
      props([
        ['id', m.id],
        ['namespace', m.namespace],
        ['kind', m.kind],
        ['tier', m.tier],
        ['status', m.status],
        ['confidence', (m.confidence_now ?? m.confidence ?? 0).toFixed(2)],
        ['tags', (m.tags || []).join(', ')],
        ['touches', (m.touches || []).join(', ')],
        ['device', m.provenance.device],
        ['agent', m.provenance.agent],
        ['session', m.provenance.session],
        ['created', m.provenance.created_at],
        ['updated', m.provenance.updated_at],
        ['expires', m.expires_at],
        ['compacted into', m.compacted_into],
        ['reads here', String(m.reads ?? 0) + ' (' + (m.maturity || '') + ')'],
      ]));
    const edges = el('div', { id: 'memory-edges' }, el('p', { class: 'muted' }, 'Loading edges…'));
    const stale = el('div', { id: 'memory-stale' });
    clear(view).append(
      el('h1', { id: 'memory-title' }, title(m)),
      el('div', { class: 'meta' },
        el('span', { class: 'badge ' + m.status }, m.status),
        el('span', { class: 'mono' }, m.short_id),
        el('span', {}, 'updated ' + ago(m.provenance.updated_at))),
      actions(m),
      el('div', { class: 'columns' },
        el('div', {},
          content,
          conflict(m),
          stale,
          el('h2', {}, 'Edges'),
          edges,
          el('h2', {}, 'Revisions'),
          revisions(m)),
        side));
    loadEdges(m, edges);
    loadStale(m, stale);
  }

  function actions(m) {
    const act = async (what, path, done) => {
      try {
        await ctx.api('POST', '/v1/memories/' + encodeURIComponent(m.id) + path);
        ctx.toast(done);
        await load();
      } catch (e) {
        ctx.toast(what + ' failed: ' + e.message);
      }
    };
    return el('div', { class: 'actions' },
      el('button', { type: 'button', class: 'primary', id: 'edit', onclick: () => edit(m) }, 'Edit'),
      el('button', { type: 'button', id: 'link', onclick: () => link(m) }, 'Link'),
      el('a', { class: 'button', href: '/graph?focus=' + encodeURIComponent(m.id) + '&depth=2' }, 'Graph'),
      m.status === 'active' || m.status === 'stale'
        ? el('button', { type: 'button', id: 'forget', onclick: () => act('Forget', '/forget', 'Forgotten (archived)') }, 'Forget')
        : el('button', { type: 'button', id: 'restore', onclick: () => act('Restore', '/restore', 'Restored') }, 'Restore'),
      el('button', { type: 'button', class: 'danger', id: 'purge', onclick: () => purge(m) }, 'Purge…'));
  }

  function edit(m) {
    editing = true;
    const t = el('input', { type: 'text', value: m.title || '', 'aria-label': 'Title', placeholder: 'title' });
    const c = el('textarea', { 'aria-label': 'Content', value: m.content || '' });
    // the edit is made from the revision shown: the content's, which is
    // the first of the conflict when there is one, else the last
    const revs = m.revisions || [];
    const base = m.conflict && m.conflict.length ? m.conflict[0].id : revs.length ? revs[revs.length - 1].id : '';
    const form = el('form', { class: 'editor', id: 'editor' },
      el('h1', {}, 'Edit ' + m.short_id), t, c,
      el('div', { class: 'actions' },
        el('button', { type: 'submit', class: 'primary' }, 'Save'),
        el('button', { type: 'button', onclick: () => { editing = false; show(current); } }, 'Cancel')));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const req = {};
      if (t.value !== (m.title || '')) req.title = t.value;
      if (c.value !== m.content) {
        req.content = c.value;
        req.base = base;
      }
      try {
        if (Object.keys(req).length) await ctx.api('PATCH', '/v1/memories/' + encodeURIComponent(m.id), req);
        editing = false;
        ctx.toast('Saved');
        await load();
      } catch (err) {
        ctx.toast('Save failed: ' + err.message);
      }
    });
    clear(view).append(form);
    c.focus();
  }

  async function link(m) {
    const rel = select('Relation', RELS.map((r) => [r, r]), 'related_to');
    const to = el('input', { type: 'text', placeholder: 'memory id (m-…) or artefact (file:…)', 'aria-label': 'Target', required: true });
    const notes = el('input', { type: 'text', placeholder: 'notes (optional)', 'aria-label': 'Notes' });
    const dialog = el('dialog', { class: 'link' },
      el('form', { method: 'dialog' },
        el('h2', {}, 'Link ' + m.short_id),
        el('p', {}, rel), el('p', {}, to), el('p', {}, notes),
        el('div', { class: 'actions' },
          el('button', { type: 'submit', value: 'cancel', formnovalidate: true }, 'Cancel'),
          el('button', { type: 'submit', value: 'ok', class: 'primary' }, 'Link'))));
    dialog.addEventListener('close', async () => {
      dialog.remove();
      if (dialog.returnValue !== 'ok' || !to.value.trim()) return;
      try {
        await ctx.api('POST', '/v1/edges', { from: m.id, rel: rel.value, to: to.value.trim(), notes: notes.value || undefined });
        ctx.toast('Linked');
        await load();
      } catch (e) {
        ctx.toast('Link failed: ' + e.message);
      }
    });
    document.body.append(dialog);
    dialog.showModal();
    to.focus();
  }

  async function purge(m) {
    const ok = await ctx.confirm('Purge erases this memory and every revision of it on every machine. It cannot be undone.', { danger: true, typeToConfirm: m.short_id, okLabel: 'Purge' });
    if (!ok) return;
    purging = true;
    try {
      await ctx.api('POST', '/v1/memories/' + encodeURIComponent(m.id) + '/purge');
      ctx.toast('Purged ' + m.short_id);
      ctx.navigate('/memories');
    } catch (e) {
      purging = false;
      ctx.toast('Purge failed: ' + e.message);
    }
  }

  async function loadEdges(m, box) {
    let edges;
    try {
      edges = await ctx.api('POST', '/v1/edges/list', { endpoints: [m.id], direction: 'both' });
    } catch (e) {
      clear(box).append(el('p', { class: 'error' }, e.message));
      return;
    }
    if (!edges || !edges.length) {
      clear(box).append(el('p', { class: 'muted' }, 'No edges.'));
      return;
    }
    clear(box).append(el('table', { class: 'grid' },
      el('tbody', {}, edges.map((e) => {
        const out = e.from === m.id;
        const other = out ? e.to : e.from;
        return el('tr', { 'data-edge': e.id },
          el('td', {}, out ? '→' : '←'),
          el('td', {}, e.rel),
          el('td', {}, endpoint(other)),
          el('td', { class: 'muted' }, e.notes || ''),
          el('td', {}, el('button', { type: 'button', class: 'link', onclick: () => unlink(e) }, 'unlink')));
      }))));
  }

  async function unlink(e) {
    if (!(await ctx.confirm('Remove the edge ' + e.from + ' ' + e.rel + ' ' + e.to + '?', { danger: true, okLabel: 'Unlink' }))) return;
    try {
      await ctx.api('POST', '/v1/edges/unlink', { from: e.from, rel: e.rel, to: e.to });
      await load();
    } catch (err) {
      ctx.toast('Unlink failed: ' + err.message);
    }
  }

  async function loadStale(m, box) {
    if (m.status !== 'stale' && m.status !== 'active') return;
    try {
      const stale = await ctx.api('POST', '/v1/stale', { namespace: m.namespace });
      const mine = (stale || []).find((s) => s.memory && s.memory.id === m.id);
      if (mine && mine.reasons && mine.reasons.length) {
        box.append(el('h2', {}, 'Why it may no longer hold'), el('ul', {}, mine.reasons.map((r) => el('li', {}, r))));
      }
    } catch {
      // staleness is a hint; the page stands without it
    }
  }

  ctx.events.on('memory', (ev) => {
    if (current && !purging && (ev.id === current.id || ev.id === id)) {
      if (ev.change === 'deleted' && ev.status === 'deleted' && !ev.namespace) {
        clear(view).append(el('h1', {}, 'Memory ' + id), el('p', { class: 'error' }, 'This memory was purged.'));
        return;
      }
      // This machine's change that the page already shows (its own edit,
      // the capture it was opened after) is not drawn again: a redraw
      // under the reader's pointer loses what they were about to click.
      const shownAlready = (ev.change === 'created' || ev.change === 'updated') &&
        ev.updated_at === current.provenance.updated_at && ev.status === current.status;
      if (!shownAlready) load();
    }
  });
  ctx.events.on('edge', (e) => {
    if (current && !editing && (e.from === current.id || e.to === current.id)) load();
  });
  await load();
}

function endpoint(ref) {
  if (String(ref).startsWith('m-')) return el('a', { href: '/memories/' + encodeURIComponent(ref), class: 'mono' }, ref);
  return el('a', { href: '/graph?focus=' + encodeURIComponent(ref) + '&depth=2', class: 'mono' }, ref);
}

function conflict(m) {
  if (!m.conflict || !m.conflict.length) return null;
  return el('div', { class: 'conflict' },
    el('h2', {}, 'Sync conflict: ' + m.conflict.length + ' versions'),
    el('p', { class: 'muted' }, 'Edits made at the same time on different machines. Edit the memory to merge them.'),
    m.conflict.map((r) => el('div', {},
      el('div', { class: 'meta' }, el('span', { class: 'mono' }, short(r.id, 10)), el('span', {}, 'device ' + short(r.device, 12)), r.agent ? el('span', { class: 'agent' }, 'agent ' + r.agent) : null, el('span', {}, r.at)),
      el('pre', { class: 'revision' }, r.text))));
}

function revisions(m) {
  const revs = [...(m.revisions || [])].reverse();
  if (!revs.length) return el('p', { class: 'muted' }, 'No revisions.');
  return el('ul', { class: 'revisions' },
    revs.map((r, i) => el('li', {},
      el('details', { open: i === 0 && revs.length === 1 },
        el('summary', {},
          '#' + (revs.length - i) + ' ',
          el('span', { class: 'mono' }, short(r.id, 10)), ' · ',
          el('span', { title: r.at }, ago(r.at)), ' · device ',
          el('span', { class: 'mono', title: r.device }, short(r.device, 12)),
          r.agent ? [' · agent ', el('span', { class: 'agent' }, r.agent)] : null),
        el('pre', { class: 'revision' }, r.text)))));
}

function props(rows) {
  return el('dl', { class: 'props' }, rows.filter(([, v]) => v !== undefined && v !== null && v !== '').map(([k, v]) => [el('dt', {}, k), el('dd', {}, String(v))]));
}
