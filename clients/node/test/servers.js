'use strict';
// servers.js — a redis-server with the seen module, and a 3-master cluster
// made by scripts/cluster.sh, each on free 127.0.0.1 ports in a temporary
// directory, for the tests; both stopped when the test ends.
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const MODULE = process.env.SEEN_MODULE || path.join(ROOT, 'build', 'seen.so');

function freePorts(n) {
  return Promise.all(Array.from({ length: n }, () => new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  })));
}

async function waitFor(check, what, timeoutMs = 20000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch (e) { /* not yet */ }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function pingable(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write('PING\r\n'));
    s.on('data', (d) => { s.destroy(); resolve(d.toString().startsWith('+PONG')); });
    s.on('error', () => resolve(false));
  });
}

async function startServer() {
  const [port] = await freePorts(1);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'seen-node-'));
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir,
    '--save', '', '--appendonly', 'no', '--loadmodule', MODULE], { stdio: 'ignore' });
  await waitFor(() => pingable(port), `redis-server on ${port}`);
  return {
    port,
    stop() {
      proc.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function startCluster() {
  const ports = await freePorts(6);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'seen-node-cluster-'));
  const script = path.join(ROOT, 'scripts', 'cluster.sh');
  execFileSync('bash', [script, 'start', '--dir', dir, '--ports', ports.join(','),
    '--bus-ports', ports.map((p) => p + 10000 > 65535 ? p - 10000 : p + 10000).join(','),
    '--module', MODULE], { stdio: 'ignore', timeout: 120000 });
  return {
    ports,
    stop() {
      try {
        execFileSync('bash', [script, 'clean', '--dir', dir], { stdio: 'ignore', timeout: 120000 });
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

module.exports = { startServer, startCluster, waitFor, ROOT };
