// The ioredis writer of the e2e client matrix. It writes sequenced keys through a
// Cluster client with its default options until SIGTERM or EOF on stdin, then reads
// every acknowledged key back and prints one JSON report on stdout.
//
// Contract (shared with e2e/clients/redispy/writer.py):
//   env SEEDS (host:port,...), VK_USERNAME, VK_PASSWORD, PREFIX (default "cl"),
//   INTERVAL_MS (default 5), TIMEOUT_MS (default 2000).
//   stdout: {"event":"ready"} after the first acknowledged write, then one
//   {"event":"report",...} line. Diagnostics go to stderr.
//
// ESM ignores NODE_PATH, so ioredis is loaded with createRequire from the
// node_modules folder named by IOREDIS_MODULES (else the first NODE_PATH entry).

import { createRequire } from 'node:module';

const started = Date.now();
const sinceStart = () => Date.now() - started;

function log(msg) {
  process.stderr.write(`${new Date().toISOString()} +${sinceStart()}ms ${msg}\n`);
}

// Errors are counted by message, truncated and with numbers replaced, so that
// similar errors (other addresses, ports, slots) group together.
const errors = {};
function count(prefix, err) {
  const msg = err instanceof Error ? err.message : String(err);
  const key = prefix + msg.slice(0, 120).replace(/\d+/g, 'N');
  errors[key] = (errors[key] || 0) + 1;
}

// Whatever the library throws outside a command is recorded, not fatal.
process.on('uncaughtException', (err) => {
  log(`uncaughtException: ${err && err.stack ? err.stack : err}`);
  count('uncaught: ', err);
});
process.on('unhandledRejection', (err) => {
  log(`unhandledRejection: ${err && err.stack ? err.stack : err}`);
  count('uncaught: ', err);
});

const env = process.env;
const modules = env.IOREDIS_MODULES || (env.NODE_PATH || '').split(':')[0];
if (!modules) {
  log('IOREDIS_MODULES (or NODE_PATH) must name a node_modules folder');
  process.exit(2);
}
const require = createRequire(modules.replace(/\/?$/, '/'));
const Redis = require('ioredis');
const client = `ioredis ${require('ioredis/package.json').version}`;

function parseSeeds(value) {
  return value.split(',').filter(Boolean).map((s) => {
    const i = s.lastIndexOf(':');
    return { host: s.slice(0, i), port: Number(s.slice(i + 1)) };
  });
}
const seeds = parseSeeds(env.SEEDS || '');
if (seeds.length === 0) {
  log('SEEDS is empty');
  process.exit(2);
}
const prefix = env.PREFIX || 'cl';
const intervalMs = Number(env.INTERVAL_MS || 5);
const timeoutMs = Number(env.TIMEOUT_MS || 2000);

// connect returns a Cluster client with the defaults, except for credentials and
// the per-command timeout. Its error events, and those of its node connections
// (forwarded as 'node error'), are logged; those of the writer are counted.
// Without a listener ioredis only prints them.
function connect(name, countEvents, nodes = seeds) {
  const redisOptions = { commandTimeout: timeoutMs };
  if (env.VK_USERNAME) redisOptions.username = env.VK_USERNAME;
  if (env.VK_PASSWORD) redisOptions.password = env.VK_PASSWORD;
  const c = new Redis.Cluster(nodes, { redisOptions });
  c.on('error', (err) => {
    const last = err && err.lastNodeError ? ` (last node error: ${err.lastNodeError.message})` : '';
    log(`${name}: error event: ${err && err.message}${last}`);
    if (countEvents) count('event: ', err);
  });
  c.on('node error', (err, node) => {
    log(`${name}: node error event (${node}): ${err && err.message}`);
    if (countEvents) count('event: node: ', err);
  });
  for (const ev of ['connect', 'ready', 'close', 'reconnecting', 'end']) {
    c.on(ev, () => log(`${name}: ${ev}`));
  }
  return c;
}

// Stop on SIGTERM or EOF on stdin.
let stopping = false;
let onStop;
const stopped = new Promise((resolve) => { onStop = resolve; });
function stop(why) {
  if (stopping) return;
  stopping = true;
  log(`stopping: ${why}`);
  onStop();
}
process.on('SIGTERM', () => stop('SIGTERM'));
// A line SEEDS=host:port,... on stdin replaces the seeds for the read back (after a
// roll every member has a new address).
let readSeeds = null;
let stdinBuf = '';
process.stdin.on('data', (chunk) => {
  stdinBuf += chunk;
  let nl;
  while ((nl = stdinBuf.indexOf('\n')) >= 0) {
    const line = stdinBuf.slice(0, nl);
    stdinBuf = stdinBuf.slice(nl + 1);
    if (line.startsWith('SEEDS=')) readSeeds = parseSeeds(line.slice('SEEDS='.length));
  }
});
process.stdin.on('end', () => stop('stdin closed'));
process.stdin.on('error', () => stop('stdin error'));
process.stdin.resume();

const STOP = Symbol('stop');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let writes = 0;
let failed = 0;
const acked = [];
let lastAck = 0;
let longestGapMs = 0;
let longestGapAtMs = 0;

// One writer: SET <prefix>:<i> <i>, one at a time. A write that is still pending
// when the writer stops counts as failed.
const writer = connect('writer', true);
for (let i = 0; !stopping; i++) {
  writes++;
  const pending = writer.set(`${prefix}:${i}`, String(i));
  let reply;
  try {
    reply = await Promise.race([pending, stopped.then(() => STOP)]);
  } catch (err) {
    reply = err instanceof Error ? err : new Error(String(err));
  }
  if (reply === STOP) {
    pending.catch(() => {});
    log(`SET ${prefix}:${i}: pending at stop`);
    failed++;
    count('', new Error('pending at stop'));
    break;
  }
  if (reply === 'OK') {
    const now = sinceStart();
    if (acked.length === 0) {
      process.stdout.write('{"event":"ready"}\n');
    } else if (now - lastAck > longestGapMs) {
      longestGapMs = now - lastAck;
      longestGapAtMs = lastAck;
    }
    lastAck = now;
    acked.push(i);
  } else {
    const err = reply instanceof Error ? reply : new Error(`unexpected reply: ${reply}`);
    log(`SET ${prefix}:${i}: ${err.message}`);
    failed++;
    count('', err);
  }
  await Promise.race([sleep(intervalMs), stopped]);
}
log(`writes stopped: ${writes} writes, ${acked.length} acked, ${failed} failed`);
writer.disconnect();

// Read back through a new client, so that a writer client left in a bad state
// does not hide what the cluster kept. A key whose GET fails goes to the back of
// the queue. Retries end 30 s after the first failure: the keys not read by then
// count as unread. Each GET is bounded by the timeout, as a command queued while
// the client reconnects has none.
const reader = connect('reader', false, readSeeds || seeds);
const readBudgetMs = 30000;
const queue = acked.slice();
let firstReadError = 0;
let lost = 0;
const lostIndexes = [];

function get(key) {
  let timer;
  const pending = reader.get(key);
  pending.catch(() => {});
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('read timed out')), timeoutMs);
  });
  return Promise.race([pending, timeout]).finally(() => clearTimeout(timer));
}

async function readBack() {
  while (queue.length > 0) {
    if (firstReadError && Date.now() - firstReadError > readBudgetMs) return;
    const i = queue.shift();
    const key = `${prefix}:${i}`;
    try {
      const value = await get(key);
      if (value !== String(i)) {
        lost++;
        lostIndexes.push(i);
      }
    } catch (err) {
      if (!firstReadError) firstReadError = Date.now();
      log(`GET ${key}: ${err && err.message}`);
      queue.push(i);
      await sleep(100);
    }
  }
}

// A few GETs in flight at a time.
await Promise.all(Array.from({ length: 32 }, readBack));
const lostKeys = lostIndexes.sort((a, b) => a - b).slice(0, 10).map((i) => `${prefix}:${i}`);

process.stdout.write(JSON.stringify({
  event: 'report',
  client,
  writes,
  acked: acked.length,
  failed,
  lost,
  lostKeys,
  unread: queue.length,
  longestGapMs,
  longestGapAtMs,
  errors,
}) + '\n');
reader.disconnect();
process.exit(0);
