// vkllm serve with an encoder and an API key: /v1/embeddings (and /embeddings) equal to what
// `vkllm embed` writes for the same texts, through the `openai` npm client (base64, its
// default) and curl-like fetch (floats); 401 without the key, /health open; an encoder refuses
// to generate; /metrics parses as Prometheus text and counts the requests made.
// Run by run_server_test.sh with BASE_URL=http://127.0.0.1:PORT, API_KEY, MODEL_FILE, VKLLM_BIN.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';

const base = process.env.BASE_URL;
const apiKey = process.env.API_KEY;
const modelFile = process.env.MODEL_FILE;
const bin = process.env.VKLLM_BIN;
assert.ok(base && apiKey && modelFile && bin, 'BASE_URL, API_KEY, MODEL_FILE and VKLLM_BIN must be set');
// A file's float32 values (a small Buffer may be a view into a shared pool).
const floats = (b) => new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
const log = (...a) => console.log('embeddings:', ...a);
const auth = { Authorization: `Bearer ${apiKey}` };
let made = {};  // "route status" -> requests this test made
async function call(method, path, body, headers = auth) {
  const r = await fetch(base + path, {
    method, headers: { 'Content-Type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const key = `${path.startsWith('/v1/models/') ? '/v1/models/{model}' : path} ${r.status}`;
  made[key] = (made[key] ?? 0) + 1;
  const text = await r.text();
  return { status: r.status, headers: r.headers, text, body: r.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(text) : null };
}

// ---- the API key ----
assert.equal((await call('GET', '/health', undefined, {})).status, 200, '/health needs no key');
for (const headers of [{}, { Authorization: 'Bearer wrong' }, { Authorization: apiKey }]) {
  const r = await call('GET', '/v1/models', undefined, headers);
  assert.equal(r.status, 401, JSON.stringify(headers));
  assert.equal(r.body.error.code, 'invalid_api_key');
  assert.equal(r.body.error.type, 'invalid_request_error');
  assert.equal(r.headers.get('www-authenticate'), 'Bearer');
}
assert.equal((await call('POST', '/v1/embeddings', { input: 'x' }, {})).status, 401);
assert.equal((await call('GET', '/metrics', undefined, {})).status, 401);
const models = await call('GET', '/v1/models');
assert.equal(models.status, 200);
const model = models.body.data[0].id;
const noKey = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'wrong', maxRetries: 0 });
await assert.rejects(noKey.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
made['/v1/models 401'] += 1;
log('401 without the key, 200 with it, /health open');

// ---- embeddings = vkllm embed ----
const texts = ['hello world', 'The cat sat on the mat.', 'a'];
const work = mkdtempSync(join(tmpdir(), 'vkllm-embed-'));
writeFileSync(join(work, 'texts.txt'), texts.join('\n') + '\n');
execFileSync(bin, ['embed', '-m', modelFile, '-f', join(work, 'texts.txt'), '-o', join(work, 'e.f32')], { stdio: ['ignore', 'ignore', 'ignore'] });
const expected = floats(readFileSync(join(work, 'e.f32')));
rmSync(work, { recursive: true });
const nEmbd = expected.length / texts.length;
assert.ok(Number.isInteger(nEmbd) && nEmbd > 0);
const row = (i) => Array.from(expected.subarray(i * nEmbd, (i + 1) * nEmbd));
// The npm client asks for base64 and decodes it into numbers.
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0, timeout: 120_000 });
const viaClient = await client.embeddings.create({ model, input: texts });
made['/v1/embeddings 200'] = (made['/v1/embeddings 200'] ?? 0) + 1;
assert.equal(viaClient.data.length, texts.length);
viaClient.data.forEach((d, i) => {
  assert.equal(d.index, i);
  assert.deepEqual(d.embedding, row(i), `text ${i}: the same float32 values as vkllm embed`);
});
assert.ok(viaClient.usage.prompt_tokens > texts.length);
// Floats as JSON numbers, one text, and the route without /v1.
for (const path of ['/v1/embeddings', '/embeddings']) {
  const r = await call('POST', path, { model, input: texts[1], encoding_format: 'float' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.object, 'list');
  assert.deepEqual(r.body.data[0].embedding.map(Math.fround), row(1), `${path}: the same values as vkllm embed`);
}
// Token ids as input: the text's tokens give the text's vector.
const ids = (await call('POST', '/tokenize', { content: texts[0], add_special: true })).body.tokens;
const byIds = await call('POST', '/v1/embeddings', { input: [ids], encoding_format: 'float' });
assert.deepEqual(byIds.body.data[0].embedding.map(Math.fround), row(0));
log(`${texts.length} texts x ${nEmbd}: equal to vkllm embed (base64 and float, with and without /v1, text and ids)`);

// ---- refusals ----
for (const [body, param] of [[{}, 'input'], [{ input: 5 }, 'input'], [{ input: [] }, 'input'], [{ input: [[1, 99999999]] }, 'input'],
  [{ input: 'x', dimensions: 3 }, 'dimensions'], [{ input: 'x', encoding_format: 'int8' }, 'encoding_format'],
  [{ input: 'x', frobnicate: 1 }, 'frobnicate']]) {
  const r = await call('POST', '/v1/embeddings', body);
  assert.equal(r.status, 400, JSON.stringify(body));
  assert.equal(r.body.error.param, param, JSON.stringify(body));
}
await assert.rejects(client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === 'model' && /encoder/.test(e.message));
made['/v1/chat/completions 400'] = (made['/v1/chat/completions 400'] ?? 0) + 1;
log('bad embedding requests and generation on an encoder answered 400');

// ---- /metrics: Prometheus text that counts the requests above ----
await new Promise((r) => setTimeout(r, 300));  // each request is counted once its answer is sent
const m = await call('GET', '/metrics');
made['/metrics 200'] -= 1;  // counted after this answer
assert.equal(m.status, 200);
assert.match(m.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
const samples = new Map();
const types = new Map();
const name = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const labels = `\\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\.)*")(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\.)*")*\\}`;
const sampleLine = new RegExp(`^(${name})(${labels})? (-?[0-9]+(?:\\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|NaN|[-+]Inf)$`);
assert.ok(m.text.endsWith('\n'));
for (const line of m.text.slice(0, -1).split('\n')) {
  if (line.startsWith('# HELP ')) continue;
  const t = line.match(/^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/);
  if (t) {
    assert.ok(!types.has(t[1]), `one TYPE line for ${t[1]}`);
    types.set(t[1], t[2]);
    continue;
  }
  const s = line.match(sampleLine);
  assert.ok(s, `a Prometheus sample line: ${JSON.stringify(line)}`);
  assert.ok(types.has(s[1]), `${s[1]} has a TYPE line before its samples`);
  samples.set(s[1] + (s[2] ?? ''), Number(s[3]));
}
for (const [key, n] of Object.entries(made)) {
  if (n === 0) continue;
  const [route, status] = key.split(' ');
  const got = samples.get(`vkllm_requests_total{route="${route}",status="${status}"}`);
  assert.equal(got, n, `vkllm_requests_total for ${route} ${status}`);
}
for (const g of ['vkllm_queue_depth', 'vkllm_busy', 'vkllm_connections', 'vkllm_seconds_per_token', 'vkllm_generated_tokens_total',
  'vkllm_prompt_tokens_total', 'vkllm_embedded_tokens_total', 'vkllm_busy_seconds_total'])
  assert.ok(samples.has(g), `${g} is exported`);
assert.equal(samples.get('vkllm_queue_depth'), 0);
assert.equal(samples.get('vkllm_busy'), 0);
assert.ok(samples.get('vkllm_embedded_tokens_total') >= viaClient.usage.prompt_tokens);
assert.ok(samples.get('vkllm_connections') >= 1);
log(`/metrics: ${samples.size} samples parse as Prometheus text and count the ${Object.values(made).reduce((a, b) => a + b)} requests made`);
log('all checks passed');
