// pagekit.js: what the graph, machines and maintenance pages share: their
// stylesheet, sections, memory links and small formatting helpers.
import { el } from './api.js';

// useStyles adds the pages' stylesheet once (a file: the CSP allows no
// inline style). It carries the id of Cytoscape's stylesheet: Cytoscape
// adds an inline <style> of one rule (which the CSP refuses, reporting a
// violation) unless an element of that id is there; pages.css holds the
// rule.
export function useStyles() {
  if (document.querySelector('link[data-pages-css]')) return;
  document.head.append(el('link', { rel: 'stylesheet', href: '/static/pages.css', 'data-pages-css': '', id: '__________cytoscape_stylesheet' }));
}

// section is a titled block whose body is filled later.
export function section(title, testid, ...children) {
  return el('section', { class: 'block', 'data-testid': testid }, el('h2', {}, title), ...children);
}

// memoryLink links to a memory's page; artefacts (file:, code:, url:)
// show as code, linking to their neighbourhood in the graph.
export function memoryLink(id, title) {
  if (String(id).startsWith('m-')) {
    return el('a', { href: '/memories/' + encodeURIComponent(id), title: id }, clip(title || id, 80));
  }
  return el('a', { href: '/graph?focus=' + encodeURIComponent(id), class: 'mono', title: id }, clip(id, 80));
}

// clip shortens text to n characters on one line.
export function clip(text, n) {
  const s = String(text || '').replace(/\s+/g, ' ').trim();
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

// failure shows an error where a block's content would be.
export function failure(box, err) {
  box.replaceChildren(el('p', { class: 'error' }, err.message || String(err)));
}

// debounce calls fn once, ms after the last of a burst of calls; its
// cancel() drops a pending call.
export function debounce(fn, ms) {
  let t = 0;
  const call = (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
  call.cancel = () => clearTimeout(t);
  return call;
}

// namespaceCounts returns the namespaces that hold memories, by name, each
// with its count (GET /v1/stats): for the parts of a page that are of one
// namespace when all are shown.
export async function namespaceCounts(ctx) {
  const counts = (await ctx.api('GET', '/v1/stats')).by_namespace || {};
  return Object.keys(counts).sort().map((name) => ({ name, count: counts[name] }));
}

// cut shortens text to n characters, keeping its line breaks.
export function cut(text, n) {
  const s = String(text || '');
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}
