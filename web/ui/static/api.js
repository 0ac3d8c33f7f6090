// api.js: the helpers every page uses: the JSON API, the event stream,
// DOM building (text only: memory text is hostile), toasts and dialogs.

const API = '/ui/api';

// createApi returns api(method, path, body): the parsed JSON answer of
// /ui/api + path, or an Error with the API's message. csrf is sent on
// every call that writes.
export function createApi(csrf) {
  return async function api(method, path, body) {
    const init = { method, headers: {}, credentials: 'same-origin' };
    if (method !== 'GET' && method !== 'HEAD') {
      init.headers['X-CSRF-Token'] = csrf;
    }
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const resp = await fetch(API + path, init);
    if (resp.status === 401) {
      window.location.assign('/ui/login');
      throw new Error('the session has ended: run memmesh ui');
    }
    const text = await resp.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = { error: text.trim() };
      }
    }
    if (!resp.ok) {
      const err = new Error((data && data.error) || resp.statusText);
      err.status = resp.status;
      err.code = data && data.code;
      throw err;
    }
    // A list's page answers the cursor of the next page in a header: the
    // array carries it as .next (null on the last page).
    if (Array.isArray(data)) data.next = resp.headers.get('Next-Cursor');
    return data;
  };
}

// createEvents opens the event stream once and keeps it open. on(type,
// fn) calls fn with each event's parsed data and returns a function that
// unsubscribes. Besides the server's events (memory, edge, peer, ping) it
// emits open, down when the stream is lost, up when it is back, and then
// resync: what happened while it was down was not sent, so a page that
// shows live data reads it again.
export function createEvents() {
  const handlers = new Map();
  let source = null;
  let down = false;
  let retry = 0; // our own reopening's timer, when the browser gave up
  let wait = RETRY_MIN;
  const emit = (type, data) => {
    for (const fn of handlers.get(type) || []) {
      try {
        fn(data);
      } catch (e) {
        console.error(e);
      }
    }
  };
  const dispatch = (type) => (msg) => {
    let data;
    try {
      data = JSON.parse(msg.data);
    } catch {
      return;
    }
    emit(type, data);
  };
  const lost = () => {
    if (down) return;
    down = true;
    emit('down', {});
  };
  // reopen opens a new stream after an answer that was no stream (the
  // browser does not retry those): a session that ended goes to the login
  // page, anything else is retried, less often each time.
  const reopen = async () => {
    try {
      const r = await fetch(API + '/session', { credentials: 'same-origin' });
      if (r.status === 401) {
        window.location.assign('/ui/login');
        return;
      }
    } catch {
      // still unreachable: the stream's own error says so again
    }
    open();
  };
  const open = () => {
    source = new EventSource(API + '/events');
    for (const type of ['memory', 'edge', 'peer', 'ping']) {
      source.addEventListener(type, dispatch(type));
    }
    source.addEventListener('open', () => {
      wait = RETRY_MIN;
      emit('open', {});
      if (down) {
        down = false;
        emit('up', {});
        emit('resync', {});
      }
    });
    source.addEventListener('error', (e) => {
      lost();
      if (e.target.readyState === EventSource.CLOSED) {
        clearTimeout(retry);
        retry = setTimeout(reopen, wait);
        wait = Math.min(wait * 2, RETRY_MAX);
      }
    });
  };
  open();
  return {
    on(type, fn) {
      if (!handlers.has(type)) handlers.set(type, new Set());
      handlers.get(type).add(fn);
      return () => handlers.get(type).delete(fn);
    },
    get connected() {
      return source !== null && source.readyState === EventSource.OPEN;
    },
  };
}

// The waits before the event stream is opened again after an answer that
// was no stream: doubled each time, from RETRY_MIN to RETRY_MAX ms.
const RETRY_MIN = 1000;
const RETRY_MAX = 30000;

// el builds an element: attrs sets properties (class, href checked by
// safeHref, on* listeners as functions, dataset via data-*), children are
// nodes or text (never parsed as HTML).
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else if (k === 'href') node.setAttribute('href', safeHref(v));
    else if (k.startsWith('data-') || k.startsWith('aria-') || k === 'role' || k === 'for') node.setAttribute(k, v);
    else node[k] = v;
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// safeHref keeps same-origin paths and http(s) links; anything else
// (javascript:, data:...) becomes inert.
export function safeHref(href) {
  try {
    const u = new URL(String(href), window.location.origin);
    if (u.protocol === 'http:' || u.protocol === 'https:') return u.href;
  } catch {
    // fall through
  }
  return '#';
}

// clear empties a node.
export function clear(node) {
  node.replaceChildren();
  return node;
}

// linkedText shows text as text, preserving line breaks, with http(s) URLs
// as links that open elsewhere.
export function linkedText(text) {
  const frag = document.createDocumentFragment();
  const re = /\bhttps?:\/\/[^\s<>"'`]+/g;
  let last = 0;
  for (const m of String(text).matchAll(re)) {
    frag.append(document.createTextNode(text.slice(last, m.index)));
    const url = m[0].replace(/[).,;:!?]+$/, '');
    frag.append(el('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, url));
    last = m.index + url.length;
  }
  frag.append(document.createTextNode(text.slice(last)));
  return frag;
}

// toast shows text for a few seconds.
export function toast(text) {
  let box = document.getElementById('toasts');
  if (!box) {
    box = el('div', { id: 'toasts', role: 'status', 'aria-live': 'polite' });
    document.body.append(box);
  }
  const t = el('div', { class: 'toast' }, text);
  box.append(t);
  setTimeout(() => t.remove(), 4000);
}

// confirm asks a question in a modal dialog. With typeToConfirm, the
// confirming button is enabled only once that text is typed.
export function confirm(text, opts = {}) {
  return new Promise((resolve) => {
    const input = opts.typeToConfirm
      ? el('input', { type: 'text', autocomplete: 'off', spellcheck: false, 'aria-label': 'Type ' + opts.typeToConfirm + ' to confirm' })
      : null;
    const ok = el('button', { type: 'submit', class: opts.danger ? 'danger' : 'primary', value: 'ok' }, opts.okLabel || 'Confirm');
    const dialog = el('dialog', { class: 'confirm' },
      el('form', { method: 'dialog' },
        el('p', {}, text),
        input ? el('p', {}, 'Type ', el('code', {}, opts.typeToConfirm), ' to confirm:') : null,
        input,
        el('div', { class: 'actions' },
          // Not a submit button: Enter in the field confirms, it never
          // cancels (a form's first submit button is its default).
          el('button', { type: 'button', value: 'cancel', onclick: () => dialog.close('cancel') }, 'Cancel'),
          ok)));
    if (input) {
      ok.disabled = true;
      input.addEventListener('input', () => {
        ok.disabled = input.value.trim() !== opts.typeToConfirm;
      });
    }
    dialog.addEventListener('close', () => {
      const yes = dialog.returnValue === 'ok' && (!input || input.value.trim() === opts.typeToConfirm);
      dialog.remove();
      resolve(yes);
    });
    document.body.append(dialog);
    dialog.showModal();
    (input || ok).focus();
  });
}

// ago says how long ago an RFC 3339 time was.
export function ago(iso) {
  if (!iso) return '';
  const s = (Date.now() - new Date(iso).getTime()) / 1000;
  if (!Number.isFinite(s)) return '';
  if (s < 60) return 'just now';
  if (s < 3600) return Math.floor(s / 60) + ' min ago';
  if (s < 86400) return Math.floor(s / 3600) + ' h ago';
  if (s < 86400 * 30) return Math.floor(s / 86400) + ' d ago';
  return new Date(iso).toISOString().slice(0, 10);
}

// short shortens a device or revision id for display.
export function short(id, n = 8) {
  return String(id || '').slice(0, n);
}
