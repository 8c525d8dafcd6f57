'use strict';
// docs.test.js — the Node.js example of docs/clients.md runs as written
// (with this package for `seen-redis` and a test server's port) and prints
// what its comments say.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { startServer, ROOT } = require('./servers');

test('the Node.js example of docs/clients.md', async () => {
  const doc = fs.readFileSync(path.join(ROOT, 'docs', 'clients.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Node.js'));
  const code = /```js\n([\s\S]*?)```/.exec(section)[1];
  const server = await startServer();
  try {
    const script = code
      .replace("require('seen-redis')", `require(${JSON.stringify(path.resolve(__dirname, '..'))})`)
      .replace('port: 6379', `port: ${server.port}`);
    const out = execFileSync(process.execPath, ['-e', script], {
      cwd: path.resolve(__dirname, '..'), encoding: 'utf8', timeout: 30000,
    });
    assert.deepStrictEqual(out.trim().split('\n'), ['3', "[ 'v0', 'v5', 'v6' ]", '[ true, false ]']);
  } finally {
    server.stop();
  }
});
