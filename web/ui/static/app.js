// app.js: the shell (header, navigation, namespace picker, theme,
// keyboard shortcuts) and the router that renders each page's module.
import { createApi, createEvents, el, clear, toast, confirm } from './api.js';

const pages = [
  { path: /^\/(memories)?$/, module: './memories.js', nav: 'memories' },
  { path: /^\/memories\/(?<id>[^/]+)$/, module: './memories.js', nav: 'memories' },
  { path: /^\/graph$/, module: './graph.js', nav: 'graph' },
  { path: /^\/machines$/, module: './machines.js', nav: 'machines' },
  { path: /^\/(maintenance|sessions)$/, module: './maintenance.js', nav: 'maintenance' },
];

const navItems = [
  { id: 'memories', href: '/memories', label: 'Memories', key: 'm' },
  { id: 'graph', href: '/graph', label: 'Graph', key: 'g' },
  { id: 'machines', href: '/machines', label: 'Machines', key: 'n' },
  { id: 'maintenance', href: '/maintenance', label: 'Maintenance', key: 't' },
];

const state = { session: null, api: null, events: null, ns: '', leave: [], main: null, nav: new Map(), renderSeq: 0, resyncs: false };

async function start() {
  applyTheme(localStorage.getItem('memmesh.theme') || 'auto');
  const bootstrap = createApi('');
  try {
    state.session = await bootstrap('GET', '/session');
  } catch (e) {
    document.body.append(el('p', { class: 'error' }, 'Cannot reach memmesh: ' + e.message));
    return;
  }
  state.api = createApi(state.session.csrf);
  state.events = createEvents();
  state.ns = localStorage.getItem('memmesh.ns') || '';
  if (state.ns && !state.session.namespaces.includes(state.ns)) state.ns = '';
  buildShell();
  window.addEventListener('popstate', () => route());
  document.addEventListener('click', interceptLinks);
  document.addEventListener('keydown', shortcuts);
  route();
}

function buildShell() {
  const nsPicker = el('select', { id: 'ns-picker', 'aria-label': 'Namespace', onchange: (e) => {
    state.ns = e.target.value;
    localStorage.setItem('memmesh.ns', state.ns);
    route();
  } },
  el('option', { value: '' }, 'All namespaces'),
  state.session.namespaces.map((ns) => el('option', { value: ns, selected: ns === state.ns }, ns)));
  const theme = el('select', { id: 'theme-picker', 'aria-label': 'Theme', onchange: (e) => {
    localStorage.setItem('memmesh.theme', e.target.value);
    applyTheme(e.target.value);
  } },
  ['auto', 'light', 'dark'].map((t) => el('option', { value: t, selected: t === (localStorage.getItem('memmesh.theme') || 'auto') }, 'Theme: ' + t)));
  const live = el('span', { id: 'live', class: 'live', title: 'Live updates', role: 'status' }, '●');
  const showLive = (up) => {
    live.classList.toggle('on', up);
    live.classList.toggle('down', !up);
    live.textContent = up ? '●' : '● reconnecting…';
    live.title = up ? 'Live updates' : 'Live updates are down: reconnecting';
  };
  state.events.on('ping', () => showLive(true));
  state.events.on('open', () => showLive(true));
  state.events.on('down', () => showLive(false));
  // Back after the stream was down: a page that does not read its data
  // again on resync is rendered again, unless that would lose what is
  // being typed or asked.
  state.events.on('resync', () => {
    if (state.resyncs) return;
    const active = document.activeElement;
    const busy = state.main.querySelector('textarea') || document.querySelector('dialog[open]') ||
      (state.main.contains(active) && active.matches('input, textarea, select'));
    if (busy) toast('Live updates are back: what changed meanwhile shows after a reload.');
    else route();
  });
  const nav = el('nav', { 'aria-label': 'Pages' },
    navItems.map((n) => {
      const a = el('a', { href: n.href, 'data-nav': n.id }, n.label);
      state.nav.set(n.id, a);
      return a;
    }));
  const header = el('header', { class: 'top' },
    el('a', { href: '/', class: 'brand' }, 'memmesh'),
    nav,
    el('div', { class: 'spacer' }),
    nsPicker, theme, live,
    el('button', { type: 'button', class: 'link', title: 'Keyboard shortcuts (?)', onclick: showHelp }, '?'),
    el('button', { type: 'button', class: 'link', onclick: logout }, 'Log out'));
  state.main = el('main', { id: 'page', tabindex: '-1' });
  const footer = el('footer', {}, 'memmesh ' + state.session.version + ' · device ' + String(state.session.device).slice(0, 12));
  document.body.append(header, state.main, footer);
}

function applyTheme(t) {
  document.documentElement.dataset.theme = ['light', 'dark'].includes(t) ? t : 'auto';
}

async function logout() {
  try {
    await fetch('/ui/logout', { method: 'POST', credentials: 'same-origin', headers: { 'X-CSRF-Token': state.session.csrf } });
  } catch {
    // the session is gone either way
  }
  window.location.assign('/ui/login');
}

// navigate goes to a page path of the dashboard.
function navigate(url) {
  if (url === location.pathname + location.search) return;
  history.pushState(null, '', url);
  route();
}

function interceptLinks(e) {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.target.closest('a');
  if (!a || a.target || !a.href) return;
  const u = new URL(a.href);
  if (u.origin !== location.origin || u.pathname.startsWith('/ui/') || u.pathname.startsWith('/static/')) return;
  e.preventDefault();
  navigate(u.pathname + u.search);
}

async function route() {
  for (const fn of state.leave.splice(0)) {
    try {
      fn();
    } catch (e) {
      console.error(e);
    }
  }
  const seq = ++state.renderSeq;
  const path = location.pathname;
  let page = null;
  let match = null;
  for (const p of pages) {
    match = path.match(p.path);
    if (match) {
      page = p;
      break;
    }
  }
  for (const [id, a] of state.nav) {
    if (page && id === page.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const root = el('div', { class: 'page' });
  clear(state.main).append(root);
  if (!page) {
    root.append(el('h1', {}, 'Not found'), el('p', {}, 'No page at ' + path + '.'));
    return;
  }
  const params = Object.assign({}, match.groups || {}, { query: new URLSearchParams(location.search) });
  const leave = state.leave;
  state.resyncs = false;
  const events = {
    on(type, fn) {
      if (type === 'resync' && seq === state.renderSeq) state.resyncs = true;
      const off = state.events.on(type, fn);
      leave.push(off);
      return off;
    },
  };
  const ctx = {
    api: state.api, events, navigate, ns: state.ns, toast, confirm,
    session: state.session,
    onLeave: (fn) => leave.push(fn),
  };
  let mod;
  try {
    mod = await import(page.module);
  } catch (e) {
    if (seq === state.renderSeq) root.append(el('p', { class: 'muted' }, 'This page is not available in this version.'));
    return;
  }
  if (seq !== state.renderSeq) return;
  try {
    await mod.render(root, params, ctx);
  } catch (e) {
    console.error(e);
    root.append(el('p', { class: 'error' }, 'This page failed: ' + e.message));
  }
}

// Keyboard: / search, g m memories, g g graph, g n machines, g t
// maintenance, ? help, Escape leaves a field.
let pendingG = 0;
function shortcuts(e) {
  const t = e.target;
  const typing = t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement || (t && t.isContentEditable);
  if (e.key === 'Escape' && typing) {
    t.blur();
    return;
  }
  if (typing || e.metaKey || e.ctrlKey || e.altKey || document.querySelector('dialog[open]')) return;
  if (e.key === '/') {
    const search = document.querySelector('[data-search]');
    if (search) {
      e.preventDefault();
      search.focus();
      search.select();
    } else {
      navigate('/memories');
    }
    return;
  }
  if (e.key === '?') {
    showHelp();
    return;
  }
  const now = Date.now();
  if (e.key === 'g' && now - pendingG > 1000) {
    pendingG = now;
    return;
  }
  if (now - pendingG <= 1000) {
    pendingG = 0;
    const item = navItems.find((n) => n.key === e.key);
    if (item) navigate(item.href);
  }
}

function showHelp() {
  if (document.querySelector('dialog.help')) return;
  const rows = [
    ['/', 'search'],
    ['g m', 'memories'],
    ['g g', 'graph'],
    ['g n', 'machines'],
    ['g t', 'maintenance'],
    ['Esc', 'leave a field, close a dialog'],
    ['?', 'this help'],
  ];
  const dialog = el('dialog', { class: 'help' },
    el('form', { method: 'dialog' },
      el('h2', {}, 'Keyboard shortcuts'),
      el('table', {}, el('tbody', {}, rows.map(([k, v]) => el('tr', {}, el('td', {}, el('kbd', {}, k)), el('td', {}, v))))),
      el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Close'))));
  dialog.addEventListener('close', () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
}

start();
