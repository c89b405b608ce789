// `n` and `logit_bias` through the official `openai` npm client: n choices of one request, each
// equal to the single-choice request with seed + index (streamed and not, chat and completions;
// stream chunks carry their choice's index), and a logit bias that bans (-100) or forces (+100)
// a token in greedy and sampled generation; bad values answered 400 naming the field. Run by
// run_server_test.sh with BASE_URL=http://127.0.0.1:PORT, MODEL_FILE and VKLLM_BIN.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';

const base = process.env.BASE_URL;
const modelFile = process.env.MODEL_FILE;
const bin = process.env.VKLLM_BIN;
assert.ok(base && modelFile && bin, 'BASE_URL, MODEL_FILE and VKLLM_BIN must be set');
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
const log = (...a) => console.log('choices_and_bias:', ...a);
const model = (await client.models.list()).data[0].id;
const messages = [{ role: 'user', content: 'Once upon a time' }];
const prompt = 'Once upon a time';

async function post(path, body) {
  const r = await fetch(base + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return r.json();
}

// ---- logit_bias ----
// The prompt's most likely next token and the runner-up, from `vkllm logits`' last row.
const work = mkdtempSync(join(tmpdir(), 'vkllm-bias-'));
execFileSync(bin, ['logits', '-m', modelFile, '-p', prompt, '-o', join(work, 'l.f32')], { stdio: ['ignore', 'ignore', 'ignore'] });
const b = readFileSync(join(work, 'l.f32'));
rmSync(work, { recursive: true });
const logits = new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
const nPrompt = (await post('/tokenize', { content: prompt, add_special: true })).tokens.length;
const nVocab = logits.length / nPrompt;
const last = logits.subarray(logits.length - nVocab);
const ranked = [...last.keys()].sort((x, y) => last[y] - last[x] || x - y);
const [firstId, secondId] = ranked;
// Their pieces, from the greedy answer's top log-probabilities (the same two, by value).
const ref = await client.completions.create({ model, prompt, max_tokens: 1, temperature: 0, logprobs: 2 });
const [first, second] = Object.entries(ref.choices[0].logprobs.top_logprobs[0]).sort((x, y) => y[1] - x[1]).map((e) => e[0]);
assert.equal(ref.choices[0].text, first, 'the greedy token is the most likely');
// Banned, the greedy choice is the runner-up.
const banned = await client.completions.create(
  { model, prompt, max_tokens: 1, temperature: 0, logit_bias: { [firstId]: -100 } });
assert.equal(banned.choices[0].text, second, 'a banned token gives way to the next most likely');
// Banned under sampling: never drawn, whatever the seed.
for (let seed = 1; seed <= 6; ++seed) {
  const c = await client.completions.create(
    { model, prompt, max_tokens: 1, temperature: 1.5, top_k: 0, top_p: 1, min_p: 0, seed, logit_bias: { [firstId]: -100 } });
  assert.notEqual(c.choices[0].text, first, `seed ${seed}: the banned token was drawn`);
}
// +100 forces a token at every step (chat, greedy and sampled).
for (const temperature of [0, 1]) {
  const forced = await client.chat.completions.create(
    { model, messages, max_tokens: 3, temperature, seed: 3, logit_bias: { [secondId]: 100 } });
  assert.equal(forced.choices[0].message.content, second.repeat(3), `temperature ${temperature}: +100 forces the token`);
}
log(`logit_bias bans '${first}' and forces '${second}' (greedy and sampled)`);

async function rejects(create, param, why) {
  await assert.rejects(create(), (e) => e instanceof OpenAI.BadRequestError && e.param === param && e.message.includes(param), why);
}
for (const bias of [{ 5: 101 }, { 5: -100.5 }, { abc: 1 }, { '-3': 1 }, { 5: 'up' }, { [nVocab]: 1 }, []]) {
  await rejects(() => client.chat.completions.create({ model, messages, max_tokens: 1, logit_bias: bias }), 'logit_bias',
    `chat: logit_bias ${JSON.stringify(bias)} is refused`);
  await rejects(() => client.completions.create({ model, prompt, max_tokens: 1, logit_bias: bias }), 'logit_bias',
    `completions: logit_bias ${JSON.stringify(bias)} is refused`);
}
log('bad logit_bias values and ids answered 400 naming logit_bias');

// ---- n ----
const sampling = { max_tokens: 6, temperature: 1.2, top_k: 0, top_p: 1, min_p: 0, seed: 40 };
const single = [];
for (let i = 0; i < 3; ++i)
  single.push((await client.chat.completions.create({ model, messages, ...sampling, seed: 40 + i })).choices[0]);
const many = await client.chat.completions.create({ model, messages, ...sampling, n: 3 });
assert.equal(many.choices.length, 3);
many.choices.forEach((c, i) => {
  assert.equal(c.index, i);
  assert.equal(c.message.content, single[i].message.content, `choice ${i} = the request with seed 40 + ${i}`);
  assert.equal(c.finish_reason, single[i].finish_reason);
});
assert.ok(new Set(single.map((c) => c.message.content)).size > 1, 'the choices differ');
assert.equal(many.usage.completion_tokens, 3 * 6, 'usage counts every choice');

// Streamed: every chunk names its choice; each choice's text as unstreamed, one finish each.
const texts = ['', '', ''], finishes = [0, 0, 0];
let usage = null;
for await (const chunk of await client.chat.completions.create(
  { model, messages, ...sampling, n: 3, stream: true, stream_options: { include_usage: true } })) {
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    texts[c.index] += c.delta.content ?? '';
    if (c.finish_reason) finishes[c.index] += 1;
  }
}
assert.deepEqual(texts, many.choices.map((c) => c.message.content), 'streamed choices = whole choices');
assert.deepEqual(finishes, [1, 1, 1]);
assert.equal(usage.completion_tokens, 3 * 6);

// Completions, with a stop string and logprobs per choice; best_of equal to n is accepted.
const cs = { model, prompt, max_tokens: 5, temperature: 1, seed: 9, logprobs: 1, n: 2, best_of: 2 };
const whole = await client.completions.create(cs);
assert.deepEqual(whole.choices.map((c) => c.index), [0, 1]);
for (const c of whole.choices) assert.equal(c.logprobs.tokens.join(''), c.text);
const streamed = ['', ''];
for await (const chunk of await client.completions.create({ ...cs, stream: true }))
  for (const c of chunk.choices) streamed[c.index] += c.text;
assert.deepEqual(streamed, whole.choices.map((c) => c.text));
const one = await client.completions.create({ ...cs, n: 1, best_of: 1, seed: 10 });
assert.equal(one.choices[0].text, whole.choices[1].text, 'completions choice 1 = seed + 1');

// Constrained output in every choice.
const json = await client.chat.completions.create(
  { model, messages, n: 2, max_tokens: 60, temperature: 0.8, seed: 5, response_format: { type: 'json_object' } });
for (const c of json.choices)
  if (c.finish_reason === 'stop') assert.equal(typeof JSON.parse(c.message.content), 'object');

for (const n of [0, 129, 1.5, '2'])
  await rejects(() => client.chat.completions.create({ model, messages, max_tokens: 1, n }), 'n', `n ${JSON.stringify(n)} is refused`);
await rejects(() => client.completions.create({ model, prompt, max_tokens: 1, n: 2, best_of: 3 }), 'best_of',
  'best_of other than n is refused');
log('n choices equal the requests with seed + index, streamed and not; bad n refused');
