// vkllm serve's request fields through the official `openai` npm client and fetch: every
// refused field answered 400 with the field named in `param`, the no-op values of those fields
// and the harmless fields accepted, logprobs (chat and completions, streaming and not) equal to
// `vkllm logits`' log-softmax, tool calls and tool messages rendered through the template, the
// routes without /v1, /tokenize and /detokenize, and /metrics counting what was asked.
// Run by run_server_test.sh with BASE_URL=http://127.0.0.1:PORT, MODEL_FILE and VKLLM_BIN.
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
// A file's float32 values (a small Buffer may be a view into a shared pool).
const floats = (b) => new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
const log = (...a) => console.log('fields:', ...a);

async function post(path, body) {
  const r = await fetch(base + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

const model = (await client.models.list()).data[0].id;
const messages = [{ role: 'user', content: 'Once upon a time' }];

// ---- refused fields: 400, the field in `param` and in the message ----
const refusedChat = [
  ['tools', { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }] }],
  ['tool_choice', { tool_choice: 'required' }],
  ['tool_choice', { tool_choice: { type: 'function', function: { name: 'f' } } }],
  ['functions', { functions: [{ name: 'f' }] }],
  ['function_call', { function_call: { name: 'f' } }],
  ['audio', { audio: { voice: 'alloy', format: 'wav' } }],
  ['modalities', { modalities: ['text', 'audio'] }],
  ['reasoning_effort', { reasoning_effort: 'high' }],
  ['web_search_options', { web_search_options: {} }],
  ['verbosity', { verbosity: 'low' }],
  ['top_logprobs', { top_logprobs: 2 }],
  ['top_logprobs', { logprobs: true, top_logprobs: 21 }],
  ['logprobs', { logprobs: 1 }],
  ['frobnicate', { frobnicate: true }],
  ['prompt', { prompt: 'a chat has no prompt' }],
  ['messages[1].function_call', { messages: [...messages, { role: 'assistant', content: null, function_call: { name: 'f', arguments: '{}' } }] }],
];
for (const [param, extra] of refusedChat) {
  await assert.rejects(client.chat.completions.create({ model, messages, max_tokens: 2, ...extra }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === param && e.message.includes(param),
    `chat: ${JSON.stringify(extra)} is refused naming ${param}`);
}
const refusedCompletion = [
  ['suffix', { suffix: ' and they lived happily' }],
  ['best_of', { best_of: 3 }],
  ['echo', { echo: true, logprobs: 1 }],
  ['logprobs', { logprobs: 21 }],
  ['messages', { messages }],
  ['response_format', { response_format: { type: 'json_object' } }],
  ['mirostat', { mirostat: 2 }],
];
for (const [param, extra] of refusedCompletion) {
  await assert.rejects(client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 2, ...extra }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === param && e.message.includes(param),
    `completions: ${JSON.stringify(extra)} is refused naming ${param}`);
}
log(`${refusedChat.length + refusedCompletion.length} refused fields answered 400 naming the field`);

// ---- values that ask for nothing, and the harmless fields, are accepted ----
const reference = await client.chat.completions.create({ model, messages, max_tokens: 3, temperature: 0 });
const accepted = await client.chat.completions.create({
  model, messages, max_tokens: 3, temperature: 0, logit_bias: {}, tools: [], tool_choice: 'none',
  response_format: { type: 'text' }, modalities: ['text'], user: 'u1', metadata: { a: 'b' }, store: false,
  service_tier: 'auto', parallel_tool_calls: false, prompt_cache_key: 'k', seed: 7, repeat_last_n: 64,
});
assert.equal(accepted.choices[0].message.content, reference.choices[0].message.content);
const acceptedCompletion = await client.completions.create(
  { model, prompt: 'Once upon a time', max_tokens: 3, temperature: 0, best_of: 1, suffix: '', user: 'u1', logit_bias: {} });
assert.equal(acceptedCompletion.choices[0].finish_reason, 'length');
log('no-op values and harmless fields accepted');

// ---- logprobs equal `vkllm logits`' log-softmax ----
const prompt = 'Once upon a time';
const work = mkdtempSync(join(tmpdir(), 'vkllm-fields-'));
execFileSync(bin, ['logits', '-m', modelFile, '-p', prompt, '-o', join(work, 'l.f32')], { stdio: ['ignore', 'ignore', 'ignore'] });
const logits = floats(readFileSync(join(work, 'l.f32')));
rmSync(work, { recursive: true });
const promptIds = (await post('/tokenize', { content: prompt, add_special: true, parse_special: false })).body.tokens;
const nVocab = logits.length / promptIds.length;
assert.ok(Number.isInteger(nVocab), `logits hold ${promptIds.length} rows`);
const last = logits.subarray(logits.length - nVocab);
let max = -Infinity;
for (const x of last) max = Math.max(max, x);
let sum = 0;
for (const x of last) sum += Math.exp(x - max);
const logSoftmax = (id) => last[id] - max - Math.log(sum);
const pieceId = async (piece) => (await post('/tokenize', { content: piece, parse_special: false })).body.tokens;

const lc = await client.completions.create({ model, prompt, max_tokens: 4, temperature: 0, logprobs: 3 });
const lp = lc.choices[0].logprobs;
assert.equal(lp.tokens.length, lc.usage.completion_tokens);
assert.equal(lp.tokens.join(''), lc.choices[0].text, 'the tokens make the text');
assert.equal(lp.token_logprobs.length, 4);
assert.equal(lp.top_logprobs.length, 4);
assert.equal(Object.keys(lp.top_logprobs[0]).length, 3);
assert.deepEqual(lp.text_offset, [0, 1, 2, 3].map((i) => lp.tokens.slice(0, i).join('').length));
// The first token: its id from the greedy argmax of `vkllm logits`' last row.
let argmax = 0;
for (let i = 1; i < nVocab; ++i) if (last[i] > last[argmax]) argmax = i;
assert.ok(Math.abs(lp.token_logprobs[0] - logSoftmax(argmax)) < 2e-3,
  `first token's logprob ${lp.token_logprobs[0]} = log-softmax ${logSoftmax(argmax)}`);
for (const [piece, value] of Object.entries(lp.top_logprobs[0])) {
  const ids = await pieceId(piece);
  if (ids.length === 1) assert.ok(Math.abs(value - logSoftmax(ids[0])) < 2e-3, `top logprob of ${JSON.stringify(piece)}`);
}
log('completions logprobs = vkllm logits log-softmax:', lp.token_logprobs[0].toFixed(4));

const chatLp = await client.chat.completions.create({ model, messages, max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 2 });
const content = chatLp.choices[0].logprobs.content;
assert.equal(content.length, chatLp.usage.completion_tokens);
assert.equal(content.map((c) => c.token).join(''), chatLp.choices[0].message.content);
for (const c of content) {
  assert.equal(c.top_logprobs.length, 2);
  assert.equal(c.top_logprobs[0].token, c.token, 'greedy: the chosen token is the most likely');
  assert.ok(Math.abs(c.top_logprobs[0].logprob - c.logprob) < 1e-6);
  assert.ok(c.logprob <= 0 && c.top_logprobs[1].logprob <= c.logprob);
  assert.deepEqual(c.bytes, [...Buffer.from(c.token)]);
}
const noLp = await client.chat.completions.create({ model, messages, max_tokens: 4, temperature: 0 });
assert.equal(noLp.choices[0].logprobs, null);
// Streaming: the same tokens and values, spread over the chunks.
const streamedLp = [];
for await (const chunk of await client.chat.completions.create(
  { model, messages, max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 2, stream: true }))
  for (const c of chunk.choices) streamedLp.push(...(c.logprobs?.content ?? []));
assert.deepEqual(streamedLp.map((c) => c.token), content.map((c) => c.token));
streamedLp.forEach((c, i) => assert.ok(Math.abs(c.logprob - content[i].logprob) < 1e-3, `streamed logprob ${i}`));
log('chat logprobs, streamed and not:', content.map((c) => c.logprob.toFixed(3)).join(' '));

// ---- echo ----
const echoed = await client.completions.create({ model, prompt, max_tokens: 4, temperature: 0, echo: true });
assert.equal(echoed.choices[0].text, prompt + lc.choices[0].text);

// ---- tool calls and tool messages reach the template (run_server_test.sh's renders them) ----
const toolMessages = [
  { role: 'user', content: 'What is the weather' },
  { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
  { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
];
const toolChat = await client.chat.completions.create({ model, messages: toolMessages, max_tokens: 3, temperature: 0 });
const toolText = 'user: What is the weather\nassistant: [call get_weather {"city":"Paris"}]\ntool: sunny[for c1]\nassistant:';
const toolRef = await client.completions.create({ model, prompt: toolText, max_tokens: 3, temperature: 0 });
assert.equal(toolChat.usage.prompt_tokens, toolRef.usage.prompt_tokens, 'the tool call and tool message are in the prompt');
assert.equal(toolChat.choices[0].message.content, toolRef.choices[0].text);
log('tool calls and tool messages rendered through the template');

// ---- the routes without /v1 ----
const bare = new OpenAI({ baseURL: base, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
assert.equal((await bare.models.list()).data[0].id, model);
assert.equal((await bare.models.retrieve(model)).id, model);
const bareChat = await bare.chat.completions.create({ model, messages, max_tokens: 3, temperature: 0 });
assert.equal(bareChat.choices[0].message.content, reference.choices[0].message.content);
const bareCompletion = await bare.completions.create({ model, prompt, max_tokens: 4, temperature: 0 });
assert.equal(bareCompletion.choices[0].text, lc.choices[0].text);
log('/models, /chat/completions, /completions without /v1');

// ---- embeddings: a decoder cannot, with a 400 naming the model ----
await assert.rejects(client.embeddings.create({ model, input: 'hello' }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === 'model' && /cannot embed/.test(e.message));

// ---- /tokenize and /detokenize (llama-server's shapes) ----
for (const text of ['Once upon a time, there was a cat.', 'Tom and Mia played in the garden']) {
  const t = await post('/tokenize', { content: text });
  assert.equal(t.status, 200);
  assert.ok(t.body.tokens.length > 0 && t.body.tokens.every(Number.isInteger));
  const d = await post('/detokenize', { tokens: t.body.tokens });
  assert.equal(d.status, 200);
  assert.equal(d.body.content, text, 'tokenize then detokenize gives the text back');
  const p = await post('/tokenize', { content: text, with_pieces: true });
  assert.deepEqual(p.body.tokens.map((x) => x.id), t.body.tokens);
  assert.equal(p.body.tokens.map((x) => x.piece).join('').trim(), text);
}
const withBos = (await post('/tokenize', { content: 'hi', add_special: true })).body.tokens;
const withoutBos = (await post('/tokenize', { content: 'hi' })).body.tokens;
assert.ok(withBos.length >= withoutBos.length);
for (const [body, param] of [[{ tokens: [1, 99999999] }, 'tokens'], [{ tokens: [-1] }, 'tokens'], [{ tokens: 'abc' }, 'tokens'],
  [{ tokens: [1.5] }, 'tokens'], [{}, 'tokens'], [{ tokens: [1], extra: 1 }, 'extra']]) {
  const r = await post('/detokenize', body);
  assert.equal(r.status, 400, JSON.stringify(body));
  assert.equal(r.body.error.param, param);
}
for (const [body, param] of [[{}, 'content'], [{ content: 5 }, 'content'], [{ content: 'x', add_special: 'yes' }, 'add_special']]) {
  const r = await post('/tokenize', body);
  assert.equal(r.status, 400, JSON.stringify(body));
  assert.equal(r.body.error.param, param);
}
log('/tokenize and /detokenize round trips and errors');
log('all checks passed');
