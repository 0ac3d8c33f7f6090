// machines.js: the mesh: the devices of the registry and the peers as this
// node sees them (live, from the peer event), inviting a machine and
// revoking one, and what syncing could not decide: sync conflicts and
// contradictions, side by side, each with a way to resolve it.
//
// Stable test ids:
//   machines-status       this node's part in the mesh (one line)
//   peers-table           the peers (rows: data-testid peer-row, data-device)
//   devices-table         the devices (rows: data-testid device-row, data-device)
//   invite-button         asks for an invite token
//   invite-token          the token
//   invite-command        the command to run on the other machine
//   invite-copy           copies the command
//   revoke-button         on each device row but this one's
//   conflicts-list        sync conflicts (items: data-testid conflict, data-id)
//   contradictions-list   contradictions (items: data-testid contradiction)
//   keep-revision         on each version of a conflict: keeps it
//   keep-memory           on each side of a contradiction: keeps it, forgets the other
//   merge-edit            opens the merge editor; merge-text its text; merge-save saves
import { el, clear, ago, short } from './api.js';
import { useStyles, section, memoryLink, failure, debounce } from './pagekit.js';

export async function render(root, params, ctx) {
  useStyles();
  const status = el('p', { class: 'muted', 'data-testid': 'machines-status' }, 'Loading…');
  const peersBox = el('div', {}, el('p', { class: 'muted' }, 'Loading…'));
  const devicesBox = el('div', {}, el('p', { class: 'muted' }, 'Loading…'));
  const inviteBox = el('div', {});
  const conflictsBox = el('div', { 'data-testid': 'conflicts-list' }, el('p', { class: 'muted' }, 'Loading…'));
  const contraBox = el('div', { 'data-testid': 'contradictions-list' }, el('p', { class: 'muted' }, 'Loading…'));
  const inviteBtn = el('button', { type: 'button', class: 'primary', 'data-testid': 'invite-button' }, 'Invite a machine');
  const ttl = el('select', { 'aria-label': 'Invite valid for' },
    [['30m', '30 minutes'], ['1h', '1 hour'], ['24h', '1 day'], ['168h', '7 days']].map(([v, l]) => el('option', { value: v, selected: v === '1h' }, 'valid ' + l)));
  root.append(
    el('h1', {}, 'Machines'),
    status,
    section('Peers', 'peers', peersBox),
    section('Devices', 'devices', el('div', { class: 'toolbar' }, inviteBtn, ttl), inviteBox, devicesBox),
    section('Sync conflicts', 'conflicts', el('p', { class: 'muted' }, 'Edited on two machines at once: keep one version, or merge them by editing.'), conflictsBox),
    section('Contradictions', 'contradictions', el('p', { class: 'muted' }, 'Memories linked by contradicts: keep one and forget the other, or merge them by editing.'), contraBox));

  inviteBtn.addEventListener('click', () => invite(ctx, inviteBox, ttl.value, inviteBtn));

  const peers = new Map(); // device -> peer row data
  const drawPeers = () => showPeers(peersBox, [...peers.values()]);
  // loadStatus shows the status line; false when the mesh is off.
  const loadStatus = async () => {
    try {
      const st = await ctx.api('GET', '/v1/mesh/status');
      status.textContent = meshLine(st);
      if (!st.enabled) {
        peersBox.replaceChildren(el('p', { class: 'muted' }, 'This node runs without the mesh.'));
        inviteBtn.disabled = true;
        return false;
      }
    } catch (e) {
      failure(status, e);
    }
    return true;
  };
  const loadMesh = async () => {
    if (!await loadStatus()) return;
    try {
      for (const p of (await ctx.api('GET', '/v1/mesh/peers')) || []) peers.set(p.device, p);
      drawPeers();
    } catch (e) {
      failure(peersBox, e);
    }
  };
  const loadDevices = async () => {
    try {
      showDevices(devicesBox, (await ctx.api('GET', '/v1/mesh/devices')) || [], ctx, loadDevices);
    } catch (e) {
      failure(devicesBox, e);
    }
  };
  const loadDoctor = async () => {
    let rep;
    try {
      rep = await ctx.api('GET', '/v1/doctor');
    } catch (e) {
      failure(conflictsBox, e);
      failure(contraBox, e);
      return;
    }
    showConflicts(conflictsBox, rep.conflicts || [], ctx, loadDoctor);
    showContradictions(contraBox, rep.contradictions || [], ctx, loadDoctor);
  };

  // Live: a peer's row changes in place; a device joining or leaving
  // changes the status line and the devices.
  const laterMesh = debounce(() => Promise.all([loadStatus(), loadDevices()]), 500);
  ctx.events.on('peer', (p) => {
    if (!p || !p.device) return;
    const before = peers.get(p.device);
    peers.set(p.device, p);
    drawPeers();
    if (!before || before.state !== p.state) laterMesh();
  });
  // A merged or edited memory may raise or settle a conflict; a
  // contradicts edge raises or settles a contradiction. Not while a merge
  // is being written: that would take its text away.
  const laterDoctor = debounce(() => {
    if (root.querySelector('[data-testid="merge-text"]')) laterDoctor();
    else loadDoctor();
  }, 1000);
  ctx.events.on('memory', (m) => {
    if (m.change === 'merged' || m.change === 'updated') laterDoctor();
  });
  ctx.events.on('edge', (e) => {
    if (e && e.rel === 'contradicts') laterDoctor();
  });
  // Back after the stream was down: what happened meanwhile was not sent.
  ctx.events.on('resync', () => {
    loadMesh();
    loadDevices();
    laterDoctor();
  });
  ctx.onLeave(() => {
    laterMesh.cancel();
    laterDoctor.cancel();
  });
  await Promise.all([loadMesh(), loadDevices(), loadDoctor()]);
}

function meshLine(st) {
  if (!st.enabled) return 'The mesh is off on this node.';
  const parts = [
    'This device: ' + (st.name || short(st.device, 12)),
    st.devices + ' devices',
    st.peers_alive + ' of ' + st.peers + ' peers alive',
  ];
  if (st.last_sync) parts.push('last sync ' + ago(st.last_sync));
  if (st.behind) parts.push('a peer lacks ' + st.behind + ' of our documents');
  if (st.listen) parts.push('listening on ' + st.listen);
  return parts.join(' · ') + '.';
}

function showPeers(box, peers) {
  if (!peers.length) {
    box.replaceChildren(el('p', { class: 'muted' }, 'No other device yet: invite one.'));
    return;
  }
  peers.sort((a, b) => (a.name || a.device).localeCompare(b.name || b.device));
  box.replaceChildren(el('table', { class: 'grid', 'data-testid': 'peers-table' },
    el('thead', {}, el('tr', {}, ['Device', 'State', 'Round trip', 'Last sync', 'Behind', 'Version', 'Reached'].map((h) => el('th', {}, h)))),
    el('tbody', {}, peers.map((p) => el('tr', { 'data-testid': 'peer-row', 'data-device': p.device },
      el('td', { title: p.device }, p.name || short(p.device, 12), el('div', { class: 'muted mono' }, p.addr || '')),
      el('td', { class: 'state-' + String(p.state).replace(/[^a-z]/g, '') }, p.state, p.last_error ? el('div', { class: 'muted' }, p.last_error) : null),
      el('td', {}, p.rtt_ns ? (p.rtt_ns / 1e6).toFixed(1) + ' ms' : '–'),
      el('td', { title: p.last_sync || '' }, p.last_sync ? ago(p.last_sync) : 'never', p.pulls ? el('div', { class: 'muted' }, p.pulls + ' pulls') : null),
      el('td', {}, String(p.behind || 0)),
      el('td', {}, p.version || '–'),
      el('td', {}, p.via && p.via.length ? 'through ' + p.via.map((v) => short(v, 8)).join(', ') : (p.state === 'alive' ? 'directly' : '–')))))));
}

function showDevices(box, devices, ctx, reload) {
  if (!devices.length) {
    box.replaceChildren(el('p', { class: 'muted' }, 'No device in the registry.'));
    return;
  }
  box.replaceChildren(el('table', { class: 'grid', 'data-testid': 'devices-table' },
    el('thead', {}, el('tr', {}, ['Device', 'Added', 'State', ''].map((h) => el('th', {}, h)))),
    el('tbody', {}, devices.map((d) => el('tr', { 'data-testid': 'device-row', 'data-device': d.key },
      el('td', { title: d.key }, d.name || short(d.key, 12), d.self ? [' ', el('span', { class: 'badge active' }, 'this one')] : null,
        el('div', { class: 'muted mono' }, short(d.key, 16))),
      el('td', {}, d.added_at ? ago(d.added_at) : '', d.added_by ? el('div', { class: 'muted' }, 'by ' + short(d.added_by, 8)) : null),
      el('td', {}, d.revoked_at ? el('span', { class: 'badge deleted' }, 'revoked ' + ago(d.revoked_at) + (d.revoked_by ? ' by ' + short(d.revoked_by, 8) : '')) : 'member',
        revocationNotes(d)),
      el('td', {}, d.self || d.revoked_at ? null : el('button', { type: 'button', class: 'danger', 'data-testid': 'revoke-button',
        onclick: () => revoke(d, ctx, reload) }, 'Revoke')))))));
}

// revocationNotes says, under a device's state, the revocations of it
// that do not stand (and why), and what this machine refused of its
// work made after its revocation.
function revocationNotes(d) {
  const notes = (d.revocations || []).filter((r) => !r.stands).map((r) =>
    el('div', { class: 'muted', 'data-testid': 'revocation-void' }, 'revoked by ' + short(r.by, 8) + ', which does not stand: ' + r.why));
  const f = d.refused;
  if (f) {
    notes.push(el('div', { class: 'muted', 'data-testid': 'refused-work' },
      'refused of its work after its revocation: ' + f.changes + ' changes in ' + f.documents + ' documents (' + f.erased +
      ' erased), ' + f.purges + ' purges undone, ' + f.refused + ' documents refused on arrival'));
  }
  return notes;
}

async function revoke(d, ctx, reload) {
  const name = d.name || short(d.key, 12);
  const ok = await ctx.confirm('Revoke ' + name + '? It will no longer sync with this mesh and cannot join again. ' +
    'What it wrote that this machine holds now stays; everything else it does or did is refused by every member.',
    { danger: true, typeToConfirm: name, okLabel: 'Revoke' });
  if (!ok) return;
  try {
    await ctx.api('POST', '/v1/mesh/revoke', { device: d.key });
    ctx.toast('Revoked ' + name + '.');
  } catch (e) {
    ctx.toast('Revoke failed: ' + e.message);
  }
  reload();
}

async function invite(ctx, box, ttl, btn) {
  btn.disabled = true;
  let inv;
  try {
    inv = await ctx.api('POST', '/v1/mesh/invite', { ttl });
  } catch (e) {
    failure(box, e);
    return;
  } finally {
    btn.disabled = false;
  }
  const command = 'memmesh join ' + inv.token;
  const copy = el('button', { type: 'button', 'data-testid': 'invite-copy' }, 'Copy');
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(command);
      ctx.toast('Copied.');
    } catch {
      const sel = window.getSelection();
      sel.selectAllChildren(cmd);
      ctx.toast('Select and copy the command.');
    }
  });
  const cmd = el('code', { 'data-testid': 'invite-command' }, command);
  clear(box).append(el('div', { class: 'block' },
    el('p', {}, 'On the other machine, run:'),
    el('div', { class: 'token' }, cmd, copy),
    el('p', { class: 'muted' }, 'Token (single use, valid until ' + new Date(inv.expires).toLocaleString() + '): ',
      el('code', { 'data-testid': 'invite-token' }, inv.token)),
    inv.addrs && inv.addrs.length ? el('p', { class: 'muted' }, 'It reaches this machine at ' + inv.addrs.join(', ') + '.') : null));
}

// ---- conflicts and contradictions ----

async function showConflicts(box, ids, ctx, reload) {
  if (!ids.length) {
    box.replaceChildren(el('p', { class: 'muted' }, 'No sync conflict.'));
    return;
  }
  const items = await Promise.all(ids.slice(0, 50).map((id) => ctx.api('GET', '/v1/memories/' + encodeURIComponent(id)).catch((e) => ({ id, error: e }))));
  box.replaceChildren(...items.map((m) => {
    if (m.error) return el('div', { class: 'conflict' }, memoryLink(m.id), ' ', el('span', { class: 'error' }, m.error.message));
    const versions = m.conflict && m.conflict.length ? m.conflict : [];
    const resolve = (text, what) => save(ctx, m.id, text, what, reload);
    return el('div', { class: 'conflict', 'data-testid': 'conflict', 'data-id': m.id },
      el('h3', {}, memoryLink(m.id, m.title || m.content), el('span', { class: 'muted' }, ' · ' + m.namespace)),
      el('div', { class: 'side-by-side' }, versions.map((r) => el('div', {},
        el('p', { class: 'muted' }, 'version ' + short(r.id, 8) + ' · device ' + short(r.device, 8) + ' · ' + ago(r.at)),
        el('pre', {}, r.text),
        el('button', { type: 'button', class: 'primary', 'data-testid': 'keep-revision', onclick: () => resolve(r.text, 'Kept version ' + short(r.id, 8) + '.') }, 'Keep this version')))),
      mergeEditor(versions.map((r) => r.text), (text) => resolve(text, 'Merged.')));
  }), ids.length > 50 ? el('p', { class: 'muted' }, (ids.length - 50) + ' more: resolve these first.') : '');
}

async function showContradictions(box, pairs, ctx, reload) {
  if (!pairs.length) {
    box.replaceChildren(el('p', { class: 'muted' }, 'No contradiction.'));
    return;
  }
  const get = (id) => ctx.api('GET', '/v1/memories/' + encodeURIComponent(id)).catch((e) => ({ id, error: e }));
  const rows = await Promise.all(pairs.slice(0, 50).map(async ([a, b]) => [await get(a), await get(b)]));
  box.replaceChildren(...rows.map(([a, b]) => {
    const side = (m, other) => el('div', {},
      el('h3', {}, memoryLink(m.id, m.title || m.content)),
      m.error ? el('p', { class: 'error' }, m.error.message) : [
        el('p', { class: 'muted' }, m.kind + ' · ' + m.status + ' · device ' + short(m.provenance && m.provenance.device, 8) + ' · ' + ago(m.provenance && m.provenance.updated_at)),
        el('pre', {}, m.content),
        el('button', { type: 'button', class: 'primary', 'data-testid': 'keep-memory', onclick: () => keepOne(ctx, m, other, reload) }, 'Keep this, forget the other'),
      ]);
    return el('div', { class: 'conflict', 'data-testid': 'contradiction', 'data-a': a.id, 'data-b': b.id },
      el('div', { class: 'side-by-side' }, side(a, b), side(b, a)),
      a.error || b.error ? null : mergeEditor([a.content, b.content], async (text) => {
        if (await save(ctx, a.id, text, null, null)) await forget(ctx, b, 'Merged into ' + short(a.id, 10) + '.', reload);
      }, 'Saved into the first memory; the second is forgotten.'));
  }), pairs.length > 50 ? el('p', { class: 'muted' }, (pairs.length - 50) + ' more: resolve these first.') : '');
}

// mergeEditor is a button that opens a text area holding the texts to
// merge; saving calls onSave with the edited text.
function mergeEditor(texts, onSave, note) {
  const wrap = el('div', { class: 'actions' });
  const open = el('button', { type: 'button', 'data-testid': 'merge-edit' }, 'Merge by editing…');
  const cancel = () => {
    wrap.replaceChildren(open);
    open.focus();
  };
  open.addEventListener('click', () => {
    const area = el('textarea', { rows: 10, 'data-testid': 'merge-text', 'aria-label': 'Merged text', spellcheck: true });
    area.value = texts.join('\n\n');
    const saveBtn = el('button', { type: 'submit', class: 'primary', 'data-testid': 'merge-save' }, 'Save merged text');
    const form = el('form', { class: 'editor', onsubmit: async (e) => {
      e.preventDefault();
      if (!area.value.trim()) return;
      saveBtn.disabled = true;
      await onSave(area.value);
      saveBtn.disabled = false;
    } }, area, note ? el('p', { class: 'muted' }, note) : null,
    el('div', { class: 'actions' }, el('button', { type: 'button', onclick: cancel }, 'Cancel'), saveBtn));
    // Escape cancels, as in a dialog.
    form.addEventListener('keydown', (e) => {
      if (e.key !== 'Escape') return;
      e.stopPropagation();
      cancel();
    });
    wrap.replaceChildren(form);
    area.focus();
  });
  wrap.append(open);
  return wrap;
}

// save updates a memory's text: as memmesh update --content does, the new
// revision settles a sync conflict.
async function save(ctx, id, text, done, reload) {
  try {
    await ctx.api('PATCH', '/v1/memories/' + encodeURIComponent(id), { content: text });
  } catch (e) {
    ctx.toast('Saving failed: ' + e.message);
    return false;
  }
  if (done) ctx.toast(done);
  if (reload) reload();
  return true;
}

async function keepOne(ctx, keep, drop, reload) {
  const ok = await ctx.confirm('Keep "' + (keep.title || short(keep.id, 10)) + '" and forget "' + (drop.title || short(drop.id, 10)) + '"? A forgotten memory can be restored.', { okLabel: 'Forget the other' });
  if (ok) await forget(ctx, drop, 'Forgot ' + short(drop.id, 10) + '.', reload);
}

async function forget(ctx, m, done, reload) {
  try {
    await ctx.api('POST', '/v1/memories/' + encodeURIComponent(m.id) + '/forget');
    ctx.toast(done);
  } catch (e) {
    ctx.toast('Forgetting failed: ' + e.message);
  }
  reload();
}
