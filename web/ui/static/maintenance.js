// maintenance.js: keeping the memory sound: the stale queue with its
// reasons, compaction proposals to review and apply, the brief exactly as
// an agent receives it (with its token count), and the agent sessions.
// /sessions is this page scrolled to the sessions; ?session=ID opens one.
// The stale queue is live: a memory turning stale joins it.
//
// Stable test ids:
//   stale-list        the stale queue (items: data-testid stale-item, data-id)
//   stale-reasons     the reasons of an item
//   stale-keep        confirms an item still holds (active again); stale-forget forgets it
//   compact-list      the compaction proposals (items: compact-cluster)
//   compact-title, compact-summary, compact-apply   in each proposal
//   compact-prompt    the instructions for writing a summary
//   brief-ns, brief-budget, brief-query, brief-format, brief-load   the brief's form
//                     (brief-ns only with all namespaces shown)
//   brief-text        the brief, preformatted, as an agent receives it
//   brief-tokens      its token count (data-tokens holds the number)
//   sessions-list     the sessions (items: session-item, data-id)
//   session-detail    the opened session
//   embed-status      search by meaning: the embedder and how many memories
//                     have their vector (refreshed while they are being made)
import { el, clear, ago, short } from './api.js';
import { useStyles, section, memoryLink, clip, cut, failure, debounce, namespaceCounts } from './pagekit.js';

export async function render(root, params, ctx) {
  useStyles();
  const staleBox = el('div', {}, el('p', { class: 'muted' }, 'Loading…'));
  const compactBox = el('div', {}, el('p', { class: 'muted' }, 'Loading…'));
  const briefBox = el('div', {});
  const sessionsBox = el('div', {}, el('p', { class: 'muted' }, 'Loading…'));
  const sessionBox = el('div', { 'data-testid': 'session-detail' });
  const sessions = section('Sessions', 'sessions', sessionsBox, sessionBox);
  const embedLine = el('p', { 'data-testid': 'embed-status' }, 'Loading…');
  root.append(
    el('h1', {}, 'Maintenance', ctx.ns ? el('span', { class: 'muted' }, ' of ' + ctx.ns) : null),
    el('nav', { class: 'toolbar', 'aria-label': 'Sections' },
      ['Stale', 'Compaction', 'Brief', 'Sessions', 'Meaning'].map((s) => el('a', { href: '#' + s.toLowerCase(), onclick: (e) => {
        e.preventDefault();
        document.getElementById(s.toLowerCase()).scrollIntoView();
      } }, s))),
    withId('stale', section('Stale', 'stale', el('p', { class: 'muted' }, 'Memories that may no longer hold, and why: check each, then keep or forget it.'), staleBox)),
    withId('compaction', section('Compaction', 'compaction', el('p', { class: 'muted' }, 'Groups of stale memories that say related things: write one summary that replaces them.'), compactBox)),
    withId('brief', section('Brief', 'brief', el('p', { class: 'muted' }, 'What an agent receives at the start of a session (memmesh context, the MCP tool and the hook), as it receives it.'), briefBox)),
    withId('sessions', sessions),
    withId('meaning', section('Meaning', 'meaning', el('p', { class: 'muted' }, 'Search by meaning: the vectors this machine makes of its memories (memmesh embed status).'), embedLine)));

  const reloadStale = () => Promise.all([loadStale(staleBox, ctx, reloadStale), loadCompact(compactBox, ctx, reloadStale)]);
  // Live: a memory that turns stale, or one of the queue that changes,
  // reloads the queue (not the proposals, whose summaries may be half
  // written).
  const laterStale = debounce(() => loadStale(staleBox, ctx, reloadStale), 500);
  ctx.events.on('memory', (m) => {
    if (ctx.ns && m.namespace && m.namespace !== ctx.ns) return;
    if (m.status === 'stale' || staleBox.querySelector('[data-testid="stale-item"][data-id="' + CSS.escape(m.id) + '"]')) laterStale();
  });
  ctx.events.on('resync', laterStale);
  ctx.onLeave(() => laterStale.cancel());
  const work = [reloadStale(), briefForm(briefBox, ctx), loadSessions(sessionsBox, sessionBox, ctx, params.query.get('session')), loadEmbed(embedLine, ctx)];
  if (location.pathname === '/sessions' || params.query.get('session')) sessions.scrollIntoView();
  await Promise.all(work);
}

// loadEmbed shows how far the vectors of search by meaning are, again
// every two seconds until they are all made or the page is left.
async function loadEmbed(line, ctx) {
  let timer = null;
  let left = false;
  ctx.onLeave(() => { left = true; clearTimeout(timer); });
  const load = async () => {
    let st;
    try {
      st = await ctx.api('GET', '/v1/embed/status');
    } catch (e) {
      failure(line, e);
      return;
    }
    line.textContent = embedText(st);
    if (!left && st.provider !== 'off' && (st.scanning || st.embedded < st.total || st.error)) timer = setTimeout(load, 2000);
  };
  await load();
}

function embedText(st) {
  if (st.provider === 'off') return 'Off: search is by words. Set [embed] provider in config.toml to search by meaning too.';
  const model = st.provider + ' ' + (st.model || '') + (st.dims ? ' (' + st.dims + ' dims)' : '');
  const done = st.scanning ? st.embedded + ' memories embedded, reading the others' : st.embedded + ' of ' + st.total + ' memories embedded';
  return model + ': ' + done + (st.error ? '. Unavailable, searching by words: ' + st.error : '');
}

function withId(id, node) {
  node.id = id;
  return node;
}

// ---- stale ----

async function loadStale(box, ctx, reload) {
  let items;
  try {
    items = (await ctx.api('POST', '/v1/stale', { namespace: ctx.ns })) || [];
  } catch (e) {
    failure(box, e);
    return;
  }
  if (!items.length) {
    box.replaceChildren(el('p', { class: 'muted', 'data-testid': 'stale-list' }, 'Nothing is stale.'));
    return;
  }
  box.replaceChildren(el('p', {}, items.length === 1 ? '1 stale memory.' : items.length + ' stale memories.'),
    el('ul', { class: 'list', 'data-testid': 'stale-list' }, items.map(({ memory: m, reasons }) => el('li', { 'data-testid': 'stale-item', 'data-id': m.id },
      el('div', {}, memoryLink(m.id, m.title || m.content), ' ',
        el('span', { class: 'muted' }, m.kind + ' · ' + m.namespace + ' · updated ' + ago(m.provenance && m.provenance.updated_at))),
      el('ul', { class: 'reasons', 'data-testid': 'stale-reasons' }, (reasons || []).map((r) => el('li', {}, r))),
      el('div', { class: 'actions' },
        el('button', { type: 'button', 'data-testid': 'stale-keep', onclick: () => change(ctx, 'PATCH', m.id, '', { status: 'active', confirm: true }, 'Confirmed: it still holds.', reload) }, 'Still holds'),
        el('button', { type: 'button', class: 'danger', 'data-testid': 'stale-forget', onclick: async () => {
          if (await ctx.confirm('Forget "' + clip(m.title || m.content, 60) + '"? It can be restored.', { okLabel: 'Forget' })) {
            await change(ctx, 'POST', m.id, '/forget', undefined, 'Forgot ' + short(m.id, 10) + '.', reload);
          }
        } }, 'Forget'))))));
}

async function change(ctx, method, id, suffix, body, done, reload) {
  try {
    await ctx.api(method, '/v1/memories/' + encodeURIComponent(id) + suffix, body);
    ctx.toast(done);
  } catch (e) {
    ctx.toast('Failed: ' + e.message);
  }
  reload();
}

// ---- compaction ----

async function loadCompact(box, ctx, reload) {
  let plan;
  try {
    plan = await ctx.api('POST', '/v1/compact', { namespace: ctx.ns });
  } catch (e) {
    failure(box, e);
    return;
  }
  const clusters = plan.clusters || [];
  if (!clusters.length) {
    box.replaceChildren(el('p', { class: 'muted', 'data-testid': 'compact-list' }, 'No proposal: no group of related stale memories.'));
    return;
  }
  box.replaceChildren(
    el('details', {}, el('summary', {}, 'How to write a summary'), el('pre', { class: 'brief', 'data-testid': 'compact-prompt' }, plan.prompt || '')),
    el('div', { 'data-testid': 'compact-list' }, clusters.map((c, i) => proposal(c, i, ctx, reload))));
}

function proposal(cluster, i, ctx, reload) {
  const boxes = cluster.members.map(({ memory: m }) => el('input', { type: 'checkbox', value: m.id, checked: true, 'aria-label': 'Include ' + short(m.id, 10) }));
  const title = el('input', { type: 'text', placeholder: 'title of the summary', 'data-testid': 'compact-title', 'aria-label': 'Title', size: 50 });
  const summary = el('textarea', { rows: 6, 'data-testid': 'compact-summary', 'aria-label': 'Summary', placeholder: 'The summary that replaces the chosen memories' });
  const fill = el('button', { type: 'button', title: 'Start from the memories’ texts' }, 'Start from their texts');
  fill.addEventListener('click', () => {
    summary.value = cluster.members.filter((_, j) => boxes[j].checked).map(({ memory: m }) => m.content).join('\n\n');
    summary.focus();
  });
  const apply = el('button', { type: 'submit', class: 'primary', 'data-testid': 'compact-apply' }, 'Apply');
  const form = el('form', { class: 'editor', onsubmit: async (e) => {
    e.preventDefault();
    const members = boxes.filter((b) => b.checked).map((b) => b.value);
    if (!members.length || !summary.value.trim()) {
      ctx.toast('Choose memories and write a summary.');
      return;
    }
    if (!await ctx.confirm('Replace ' + members.length + ' memories with this summary? They are marked compacted into it, and their edges move to it.', { okLabel: 'Apply' })) return;
    apply.disabled = true;
    try {
      const res = await ctx.api('POST', '/v1/compact/apply', { members, title: title.value.trim(), summary: summary.value });
      ctx.toast('Compacted into ' + short(res.summary && res.summary.id, 10) + '.');
      reload();
    } catch (err) {
      ctx.toast('Compaction failed: ' + err.message);
      apply.disabled = false;
    }
  } },
  title, summary, el('div', { class: 'actions' }, fill, apply));
  return el('div', { class: 'conflict', 'data-testid': 'compact-cluster' },
    el('h3', {}, 'Proposal ' + (i + 1) + ': ' + cluster.members.length + ' memories'),
    el('ul', { class: 'plain' }, cluster.members.map(({ memory: m, reasons }, j) => el('li', {},
      el('label', {}, boxes[j], ' '), memoryLink(m.id, m.title || m.content),
      el('div', { class: 'muted' }, clip(m.content, 200)),
      reasons && reasons.length ? el('div', { class: 'muted' }, 'stale: ' + reasons.join('; ')) : null))),
    form);
}

// ---- the brief ----

async function briefForm(box, ctx) {
  const budget = el('input', { type: 'number', min: 100, max: 100000, step: 100, value: 2000, 'aria-label': 'Budget in tokens', 'data-testid': 'brief-budget' });
  const query = el('input', { type: 'text', placeholder: 'a prompt, to see the brief for a task', size: 40, 'aria-label': 'Prompt', 'data-testid': 'brief-query' });
  const format = el('select', { 'aria-label': 'Format', 'data-testid': 'brief-format' },
    el('option', { value: 'markdown' }, 'Markdown'), el('option', { value: 'json' }, 'JSON'));
  const tokens = el('span', { class: 'muted', 'data-testid': 'brief-tokens', 'aria-live': 'polite' });
  const text = el('pre', { class: 'brief', 'data-testid': 'brief-text' });
  // A brief is of one namespace: with all shown, the one with the most
  // memories unless another is picked.
  let ns = null;
  if (!ctx.ns) {
    let names = [];
    try {
      names = await namespaceCounts(ctx);
    } catch (e) {
      failure(text, e);
    }
    if (names.length) {
      const most = names.reduce((a, b) => (b.count > a.count ? b : a));
      ns = el('select', { 'aria-label': 'Namespace of the brief', 'data-testid': 'brief-ns' },
        names.map((n) => el('option', { value: n.name, selected: n === most }, n.name)));
    }
  }
  const load = async () => {
    const req = { namespace: ctx.ns || (ns ? ns.value : ''), format: format.value };
    const q = query.value.trim();
    if (q) req.query = q;
    // With a prompt the default budget is the hook's (600): keep it
    // unless the field was changed.
    if (!q || budget.dataset.changed) req.budget = Number(budget.value) || 0;
    try {
      const b = await ctx.api('POST', '/v1/context/text', req);
      text.textContent = b.text;
      tokens.textContent = b.tokens + ' of ' + b.budget + ' tokens';
      tokens.dataset.tokens = String(b.tokens);
    } catch (e) {
      text.textContent = '';
      tokens.textContent = '';
      failure(text, e);
    }
  };
  budget.addEventListener('change', () => {
    budget.dataset.changed = '1';
  });
  if (ns) ns.addEventListener('change', load);
  box.append(el('form', { class: 'toolbar', onsubmit: (e) => {
    e.preventDefault();
    load();
  } }, ns ? el('label', {}, 'Namespace ', ns) : null, el('label', {}, 'Budget ', budget), query, format,
  el('button', { type: 'submit', class: 'primary', 'data-testid': 'brief-load' }, 'Show'), tokens), text);
  await load();
}

// ---- sessions ----

async function loadSessions(box, detail, ctx, open) {
  let list;
  try {
    list = (await ctx.api('POST', '/v1/sessions', { namespace: ctx.ns, limit: 100 })) || [];
  } catch (e) {
    failure(box, e);
    return;
  }
  if (!list.length) {
    box.replaceChildren(el('p', { class: 'muted', 'data-testid': 'sessions-list' }, 'No session recorded yet.'));
    return;
  }
  const show = (id) => {
    const u = new URL(location.href);
    u.searchParams.set('session', id);
    history.replaceState(null, '', u.pathname + u.search);
    loadSession(detail, ctx, id);
  };
  box.replaceChildren(el('table', { class: 'grid', 'data-testid': 'sessions-list' },
    el('thead', {}, el('tr', {}, ['Session', 'Machine', 'When', 'Turns', 'Changed', 'Failures'].map((h) => el('th', {}, h)))),
    el('tbody', {}, list.map((s) => el('tr', { 'data-testid': 'session-item', 'data-id': s.id },
      el('td', {}, el('button', { type: 'button', class: 'link', onclick: () => show(s.id) }, clip(s.title || s.id, 70)),
        el('div', { class: 'muted' }, s.client + (s.project ? ' · ' + s.project : ''))),
      el('td', {}, s.device_name || short(s.device, 8), s.local ? '' : el('div', { class: 'muted' }, 'turns on that machine')),
      el('td', { title: s.start }, ago(s.end || s.start)),
      el('td', {}, String(s.turns)),
      el('td', {}, (s.files_changed || []).length + ' files, ' + (s.commands || []).length + ' commands'),
      el('td', {}, String(s.failures || 0)))))));
  if (open) await loadSession(detail, ctx, open);
}

async function loadSession(box, ctx, id) {
  box.replaceChildren(el('p', { class: 'muted' }, 'Loading…'));
  let s;
  try {
    s = await ctx.api('GET', '/v1/sessions/' + encodeURIComponent(id));
  } catch (e) {
    failure(box, e);
    return;
  }
  const turns = s.transcript || [];
  const MAX = 500;
  clear(box).append(
    el('h3', {}, s.title || s.id),
    el('p', { class: 'muted' }, [s.client, s.device_name || short(s.device, 8), s.namespace, s.turns + ' turns', s.start ? new Date(s.start).toLocaleString() : ''].filter(Boolean).join(' · ')),
    s.summary ? el('pre', { class: 'content' }, s.summary) : null,
    s.summary_id ? el('p', {}, 'Summary memory: ', memoryLink(s.summary_id)) : null,
    list('Files changed', s.files_changed, (f) => el('a', { href: '/graph?focus=' + encodeURIComponent('file:' + f), class: 'mono' }, f)),
    list('Commands', s.commands, (c) => el('code', {}, c)),
    list('Learned', s.lessons, (l) => [memoryLink(l.id, l.title), el('span', { class: 'muted' }, ' ' + l.rule + (l.repeat ? ' (strengthened)' : ''))]),
    list('Handoffs', s.handoffs, (h) => memoryLink(h.id, h.title)),
    turns.length ? el('details', {}, el('summary', {}, 'Transcript: ' + turns.length + ' turns' + (turns.length > MAX ? ', the first ' + MAX + ' shown' : '')),
      el('ol', { class: 'plain' }, turns.slice(0, MAX).map((t) => el('li', { value: t.index },
        el('strong', {}, t.role + (t.tool ? ' · ' + t.tool : '')), t.failed ? el('span', { class: 'badge deleted' }, ' failed') : null,
        t.command ? el('pre', {}, t.command) : null,
        t.text ? el('pre', {}, cut(t.text, 2000)) : null,
        t.files && t.files.length ? el('div', { class: 'muted mono' }, t.files.join(', ')) : null))))
      : el('p', { class: 'muted' }, s.local ? 'No turns.' : 'Its turns are on the machine that ran it.'));
}

function list(title, items, item) {
  if (!items || !items.length) return null;
  return el('div', {}, el('h4', {}, title + ' (' + items.length + ')'), el('ul', { class: 'plain' }, items.slice(0, 200).map((x) => el('li', {}, item(x)))));
}
