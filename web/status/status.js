// The status page's script: polls /status.json once a second and fills the page in. Every string from the
// report goes in through text nodes (el() and textContent), never as HTML: host names, paths, object names and
// nginx's messages come from Kubernetes objects, which are attacker-controlled.
'use strict';

const POLL_MS = 1000;

/** el makes an element; string children become text nodes, null children are skipped. */
function el(tag, className, ...children) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

const text = (value) => (value === null || value === undefined ? '—' : String(value));

function duration(seconds) {
  const d = Math.floor(seconds / 86400);
  const h = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${s}s`;
  return `${s}s`;
}

function time(ms) {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? '—' : date.toLocaleTimeString();
}

/** fillRows replaces a table's body with one row per item, or one row saying `empty`. */
function fillRows(id, items, columns, empty) {
  const body = document.querySelector(`#${id} tbody`);
  const rows = (items ?? []).map((item) => {
    const row = el('tr', null);
    for (const cell of columns(item)) row.append(typeof cell === 'string' ? el('td', null, cell) : cell);
    return row;
  });
  if (rows.length === 0) {
    const cell = el('td', 'empty', items === null ? 'no sync yet' : empty);
    cell.colSpan = document.querySelectorAll(`#${id} thead th`).length;
    rows.push(el('tr', null, cell));
  }
  body.replaceChildren(...rows);
}

/** fillPairs replaces a <dl> with term/value pairs, each in a <div>. */
function fillPairs(id, pairs) {
  const list = document.getElementById(id);
  const nodes = pairs.map(([term, value, className]) => el('div', null, el('dt', null, term), el('dd', className ?? null, value)));
  list.replaceChildren(...nodes);
}

function renderController(c) {
  fillPairs('controller', [
    ['version', `v${c.version}`],
    ['class', `${c.ingressClass} (${c.controllerClass})`],
    ['replica', c.identity],
    ['role', c.role, `role-${c.role}`],
    ['uptime', duration(c.uptimeSeconds)],
    ['health', c.healthy ? 'ready' : 'not ready', c.healthy ? 'good' : 'bad'],
  ]);
  const lines = [
    ...c.healthProblems.map((p) => el('li', 'bad', p)),
    ...c.healthWarnings.map((w) => el('li', 'warn', `warning: ${w}`)),
  ];
  if (lines.length === 0) lines.push(el('li', 'good', 'ok: serving the cluster’s config'));
  document.getElementById('health').replaceChildren(...lines);
}

function renderProblems(problems) {
  document.getElementById('problems-count').textContent = problems ? String(problems.length) : '';
  fillRows(
    'problems',
    problems,
    (p) => [
      el('td', 'object nowrap', `${p.kind} ${p.namespace ? `${p.namespace}/` : ''}${p.name}`),
      el('td', 'field', p.field),
      el('td', 'message', p.message),
    ],
    'none',
  );
}

function renderRoutes(routes) {
  document.getElementById('routes-count').textContent = routes ? String(routes.length) : '';
  fillRows(
    'routes',
    routes,
    (r) => [
      el(
        'td',
        'host',
        r.host,
        r.tls ? el('span', 'badge', 'TLS') : null,
        r.servedFrom ? el('div', 'served', r.servedFrom) : null,
      ),
      el('td', 'path', r.path),
      el('td', 'nowrap', r.pathType),
      el('td', 'nowrap', text(r.ingress)),
      el(
        'td',
        'backend',
        text(r.backend),
        r.canary ? el('div', 'canary', `canary: ${r.canary.backend} (${r.canary.endpoints})`) : null,
      ),
      el('td', r.endpoints === 0 ? 'bad number' : 'number', text(r.endpoints)),
      el('td', r.answer === 'proxy' ? 'nowrap' : 'nowrap warn', r.answer),
    ],
    'no Ingress routes yet',
  );
}

function renderGatewayRoutes(routes) {
  // Only when the Gateway API has routes for this controller.
  document.getElementById('gateway-routes-section').hidden = !routes || routes.length === 0;
  document.getElementById('gateway-routes-count').textContent = routes ? String(routes.length) : '';
  const condition = (value) => el('td', value === 'True' ? 'nowrap good' : 'nowrap bad', text(value));
  // One row per parent (a route without parents still gets one).
  const rows = (routes ?? []).flatMap((r) =>
    (r.parents.length > 0 ? r.parents : [null]).map((p) => ({ route: r, parent: p })),
  );
  fillRows(
    'gateway-routes',
    routes === null ? null : rows,
    ({ route, parent }) => [
      el('td', 'nowrap', route.kind),
      el('td', 'nowrap', route.route),
      el('td', 'host', route.hostnames.length > 0 ? route.hostnames.join(' ') : '—'),
      el('td', 'nowrap', parent ? parent.parent : '—'),
      parent ? condition(parent.accepted) : '—',
      parent ? condition(parent.resolvedRefs) : '—',
    ],
    'none',
  );
}

function renderStreams(streams) {
  // Only with --tcp-services-configmap, --udp-services-configmap or --enable-ssl-passthrough.
  document.getElementById('streams-section').hidden = !streams || streams.length === 0;
  document.getElementById('streams-count').textContent = streams ? String(streams.length) : '';
  fillRows(
    'streams',
    streams,
    (s) => [
      el('td', 'nowrap', s.protocol),
      el('td', 'number', s.listen),
      s.source,
      el('td', 'backend', text(s.service)),
      el('td', s.endpoints === 0 ? 'bad number' : 'number', text(s.endpoints)),
    ],
    'none',
  );
}

function renderCertificates(certificates) {
  fillRows(
    'certificates',
    certificates,
    (c) => [
      c.host === '*' ? 'default' : c.host,
      text(c.secret ?? (c.host === '*' ? 'self-signed' : null)),
      c.notAfter ? new Date(c.notAfter).toLocaleString() : '—',
      el('td', c.daysLeft !== null && c.daysLeft < 14 ? 'bad number' : 'number', text(c.daysLeft)),
    ],
    'none',
  );
}

function renderNginx(n) {
  fillPairs('nginx', [
    ['nginx', n.state],
    ['pid', text(n.pid)],
    ['reloads', String(n.reloadsOk)],
    ['failed reloads', String(n.reloadsFailed), n.reloadsFailed > 0 ? 'bad' : null],
    ['skipped', String(n.reloadsSkipped)],
    ['pushes', String(n.pushesOk)],
    ['failed pushes', String(n.pushesFailed), n.pushesFailed > 0 ? 'bad' : null],
    ['restarts', String(n.restarts), n.restarts > 0 ? 'warn' : null],
    ...(n.lastReloadError ? [['last reload error', n.lastReloadError, 'bad']] : []),
    ...(n.lastPushError ? [['last push error', n.lastPushError, 'bad']] : []),
  ]);
  fillRows(
    'recent',
    n.recent,
    (r) => [
      time(r.at),
      r.kind,
      r.trigger,
      el('td', 'number', `${Math.round(r.durationMs)} ms`),
      el('td', r.ok ? 'good' : 'bad', r.ok ? 'ok' : `failed${r.error ? `: ${r.error}` : ''}`),
    ],
    'none recorded',
  );
}

function renderActors(actors, sync) {
  fillRows(
    'actors',
    actors,
    (a) => [
      el('td', 'actor', a.id),
      el('td', a.status === 'active' ? 'state' : 'state bad', a.state),
    ],
    'none',
  );
  fillPairs('sync', [
    ['syncs', String(sync.syncsCompleted)],
    ['failed syncs', String(sync.syncsFailed), sync.syncsFailed > 0 ? 'bad' : null],
    ['generation', String(sync.generation)],
    ['last change', text(sync.lastChange)],
    ...(sync.lastError ? [['last sync error', sync.lastError, 'bad']] : []),
  ]);
}

function render(report) {
  renderController(report.controller);
  renderProblems(report.problems);
  renderRoutes(report.routes);
  renderGatewayRoutes(report.gatewayRoutes ?? null);
  renderStreams(report.streams);
  renderCertificates(report.certificates);
  renderNginx(report.nginx);
  renderActors(report.actors, report.sync);
}

function setConnection(ok, message) {
  const line = document.getElementById('connection');
  line.className = ok ? 'connection good' : 'connection bad';
  line.textContent = message;
}

async function poll() {
  // A tab in the background asks nothing; it catches up as soon as it is shown.
  if (document.hidden) {
    document.addEventListener('visibilitychange', poll, { once: true });
    return;
  }
  try {
    const response = await fetch('/status.json', { cache: 'no-store' });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const report = await response.json();
    render(report);
    setConnection(true, `live · updated ${new Date(report.generatedAt).toLocaleTimeString()}`);
  } catch (error) {
    setConnection(false, `cannot reach the controller (${error.message}); retrying`);
  } finally {
    setTimeout(poll, POLL_MS);
  }
}

poll();
