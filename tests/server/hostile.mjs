// vkllm serve against a hostile client: every case a single request (or a few connections)
// could once use to take the server down or hold it, each answered as a server should, the
// server serving throughout and its memory back within 10% at the end. Run by
// run_server_test.sh with BASE_URL=http://127.0.0.1:PORT and SERVER_PID, against zoo-dense with
// a chat template that turns hostile for the message "hostile:join" or "hostile:quadratic".
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';

const baseURL = process.env.BASE_URL;
const serverPid = process.env.SERVER_PID;
assert.ok(baseURL && serverPid, 'BASE_URL and SERVER_PID must be set');
const { hostname: host, port } = new URL(baseURL);
const rssKiB = () => Number(readFileSync(`/proc/${serverPid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.log('hostile:', ...a);
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

// A request's raw answer: status, headers and the body's bytes (never decoded leniently).
async function request(method, path, body, headers = {}) {
  const res = await fetch(baseURL + path, {
    method, body, headers: body === undefined ? headers : { 'Content-Type': 'application/json', ...headers } });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}
// The body as JSON, after checking its bytes are valid UTF-8.
const json = (bytes) => JSON.parse(strictUtf8.decode(bytes));

async function healthy(withinMs = 2000) {
  const started = Date.now();
  const r = await request('GET', '/health');
  assert.equal(r.status, 200);
  assert.equal(json(r.bytes).status, 'ok');
  assert.ok(Date.now() - started < withinMs, `/health took ${Date.now() - started} ms`);
}

// Raw bytes on one connection; resolves with everything received once `done(text)` says so,
// the server closes, or `ms` pass.
function exchange(bytes, { done = () => false, ms = 10_000, writeSlowly = null } = {}) {
  return new Promise((resolve) => {
    const chunks = [];
    const socket = net.connect({ host, port });
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(Buffer.concat(chunks));
    };
    const timer = setTimeout(finish, ms);
    socket.on('data', (d) => {
      chunks.push(d);
      if (done(Buffer.concat(chunks).toString('latin1'))) finish();
    });
    socket.on('error', finish);
    socket.on('close', finish);
    socket.on('connect', () => (writeSlowly ? writeSlowly(socket) : socket.write(bytes)));
  });
}

const post = (path, body) =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

await healthy(60_000);
// Warm up (pipelines compiled, the first answer's buffers made) before the baseline.
assert.equal((await request('POST', '/v1/completions', JSON.stringify({ prompt: 'Once upon a time', max_tokens: 4 }))).status, 200);
const rssBefore = rssKiB();
log(`server RSS ${rssBefore} KiB before`);

// ---- 1. sampled tokens that form invalid UTF-8: streamed and whole, always valid UTF-8 ----
let replaced = 0;
for (let seed = 1; seed <= 8; ++seed) {
  for (const [path, body] of [
    ['/v1/completions', { prompt: 'Once upon a time', max_tokens: 40, temperature: 2, top_k: 0, top_p: 1, min_p: 0, seed }],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 40, temperature: 2, top_k: 0, top_p: 1, min_p: 0, seed }],
  ]) {
    const streamed = await request('POST', path, JSON.stringify({ ...body, stream: true }));
    assert.equal(streamed.status, 200);
    const text = strictUtf8.decode(streamed.bytes);  // throws on invalid UTF-8
    const events = text.split('\n\n').filter((e) => e.length > 0);
    assert.equal(events.at(-1), 'data: [DONE]', `seed ${seed}: the stream ends with [DONE]`);
    for (const e of events.slice(0, -1)) {
      const event = JSON.parse(e.replace(/^data: /, ''));
      assert.ok(!event.error, `seed ${seed}: an error event: ${e}`);
    }
    replaced += text.split('\uFFFD').length - 1;
    const whole = await request('POST', path, JSON.stringify(body));
    assert.equal(whole.status, 200, `seed ${seed}: ${whole.bytes}`);
    json(whole.bytes);
  }
}
assert.ok(replaced > 0, 'no sampled text held invalid UTF-8: the case was not reached');
log(`invalid UTF-8 from the model: ${replaced} replacement characters over 32 answers, every byte valid UTF-8`);
await healthy();

// ---- 2. hostile chat templates: refused within a few seconds, not hours or gigabytes ----
for (const content of ['hostile:join', 'hostile:quadratic']) {
  const started = Date.now();
  const r = await request('POST', '/v1/chat/completions', JSON.stringify({ messages: [{ role: 'user', content }] }));
  const seconds = (Date.now() - started) / 1000;
  assert.equal(r.status, 400, `${content}: ${r.bytes}`);
  assert.equal(json(r.bytes).error.param, 'messages');
  assert.ok(seconds < 10, `${content}: ${seconds} s`);
  log(`${content}: 400 in ${seconds.toFixed(2)} s: ${json(r.bytes).error.message.slice(0, 120)}`);
}
await healthy();

// ---- 3. bad bodies and fields: each a 4xx with OpenAI's error body ----
const cases = [
  ['"temperature": 1e400', '{"prompt": "hi", "temperature": 1e400}', 400, 'invalid_json'],
  ['invalid UTF-8 in the body', Buffer.from([...Buffer.from('{"prompt": "'), 0xff, 0xfe, ...Buffer.from('"}')]), 400, 'invalid_json'],
  ['token id past 32 bits', '{"prompt": [1, 4294967297]}', 400, 'invalid_value'],
  ['huge negative token id', '{"prompt": [1, -9223372036854775808]}', 400, 'invalid_value'],
];
for (const [what, body, status, code] of cases) {
  const r = await request('POST', '/v1/completions', body);
  assert.equal(r.status, status, `${what}: ${r.bytes}`);
  assert.equal(json(r.bytes).error.code, code, `${what}: ${r.bytes}`);
}
{
  const r = await request('POST', '/v1/completions', JSON.stringify({ prompt: 'Once', stop: '', max_tokens: 3 }));
  assert.equal(r.status, 200, `"stop": "": ${r.bytes}`);
}
log('bad fields: 400 each with an error body; "stop": "" is no stop');

// ---- 4. malformed HTTP: answered at once with a status, never a silent close ----
for (const [what, bytes, status] of [
  ['POST without Content-Length', 'POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n{"prompt": "hi"}', 411],
  ['Content-Length: -1', 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n', 400],
  ['not HTTP', 'HELLO THERE\r\n\r\n', 400],
]) {
  const started = Date.now();
  const got = (await exchange(bytes, { done: (t) => t.includes('}') })).toString('latin1');
  assert.ok(got.startsWith(`HTTP/1.1 ${status} `), `${what}: ${got.slice(0, 200)}`);
  assert.ok(Date.now() - started < 2000, `${what}: ${Date.now() - started} ms`);
  JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4));
}
log('malformed requests: 411, 400, 400 at once');

// ---- 5. pipelining: three POSTs and a GET on one keep-alive connection, answered in order ----
{
  const bodies = ['Once', 'Tom', 'The'].map((p) => JSON.stringify({ prompt: p, max_tokens: 2, temperature: 0 }));
  const bytes = bodies.map((b) => post('/v1/completions', b)).join('') + 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n';
  const got = (await exchange(bytes, { done: (t) => t.includes('"status":"ok"') })).toString('utf8');
  const statuses = [...got.matchAll(/HTTP\/1\.1 (\d+) /g)].map((m) => m[1]);
  assert.deepEqual(statuses, ['200', '200', '200', '200'], got);
  const ids = [...got.matchAll(/"id":"cmpl-(\d+)"/g)].map((m) => Number(m[1]));
  assert.equal(ids.length, 3);
  assert.ok(ids[0] < ids[1] && ids[1] < ids[2], `in order: ${ids}`);
  assert.ok(got.lastIndexOf('"status":"ok"') > got.lastIndexOf('cmpl-'), 'the GET answered last');
}
log('pipelining: 4 requests on one connection, 4 answers in order');

// ---- 6. slow clients: 30 connections sending a header byte a second; /health still answers ----
{
  const header = 'GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ' + 'a'.repeat(100);
  const sockets = [];
  const slow = Array.from({ length: 30 }, () => exchange('', {
    ms: 4000,
    writeSlowly: (socket) => {
      sockets.push(socket);
      let i = 0;
      const tick = () => { if (!socket.destroyed && i < header.length) { socket.write(header[i++]); setTimeout(tick, 1000); } };
      tick();
    },
  }));
  await sleep(1500);
  for (let i = 0; i < 3; ++i) await healthy(1000);
  await Promise.all(slow);
}
log('slow clients: 30 connections at a byte a second; /health answered within 1 s each time');

// ---- 7. 30 MB of header lines: 431 after the first 32 KiB, memory back ----
{
  const line = 'X-Filler: ' + 'a'.repeat(1000) + '\r\n';
  const got = (await exchange('', {
    done: (t) => t.includes('}'),
    writeSlowly: (socket) => {
      socket.write('GET /health HTTP/1.1\r\nHost: x\r\n');
      let sent = 0;
      const more = () => {
        while (sent < 30_000 && !socket.destroyed) {
          ++sent;
          if (!socket.write(line)) return socket.once('drain', more);
        }
      };
      socket.on('error', () => {});
      more();
    },
  })).toString('latin1');
  assert.ok(got.startsWith('HTTP/1.1 431 '), got.slice(0, 200));
}
log('30 MB of header lines: 431');
await healthy();

// ---- the server's memory is back (within 10%) ----
await sleep(500);
const rssAfter = rssKiB();
log(`server RSS ${rssAfter} KiB after (${((rssAfter / rssBefore - 1) * 100).toFixed(1)}%)`);
assert.ok(rssAfter <= rssBefore * 1.1, `RSS ${rssBefore} -> ${rssAfter} KiB`);
log('PASS');
