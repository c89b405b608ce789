// `vkllm serve --parallel 8` (continuous batching) through the official `openai` npm client:
// eight different greedy requests served one at a time, then the same eight at once (chat and
// completions, streamed and not) beside a malformed request, a request with a bad field and a
// streamed request whose client hangs up after its first token: the eight answers equal the
// one-at-a-time answers, the bad ones are 400s, the hang-up is cancelled, and /metrics reports
// the slots. Run by run_server_test.sh with BASE_URL=http://127.0.0.1:PORT.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const base = process.env.BASE_URL;
assert.ok(base, 'BASE_URL must be set');
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
const log = (...a) => console.log('parallel:', ...a);
const model = (await client.models.list()).data[0].id;

const prompts = ['Once upon a time', 'The little dog', 'One day, a girl named Lily', 'Tom had a red ball',
  'The sun was hot', 'A big fish', 'Sam and Mia went to the park', 'There was a tree'];
// Request i: chat or completion, streamed or not, of its own length.
async function request(i) {
  const max_tokens = 10 + 3 * i;
  const stream = i % 3 === 0;
  if (i % 2 === 0) {
    const body = { model, messages: [{ role: 'user', content: prompts[i] }], max_tokens, temperature: 0 };
    if (!stream) return (await client.chat.completions.create(body)).choices[0].message.content;
    let text = '';
    for await (const chunk of await client.chat.completions.create({ ...body, stream: true }))
      text += chunk.choices[0]?.delta?.content ?? '';
    return text;
  }
  const body = { model, prompt: prompts[i], max_tokens, temperature: 0 };
  if (!stream) return (await client.completions.create(body)).choices[0].text;
  let text = '';
  for await (const chunk of await client.completions.create({ ...body, stream: true })) text += chunk.choices[0]?.text ?? '';
  return text;
}

async function health() {
  return (await fetch(`${base}/health`)).json();
}

const alone = [];
for (let i = 0; i < prompts.length; ++i) alone.push(await request(i));
assert.ok(alone.every((t) => t.length > 0), `an empty answer: ${JSON.stringify(alone)}`);
log('8 requests one at a time answered');

// A client that hangs up after its first token: its slot is freed (the job is cancelled).
async function hangUp() {
  const controller = new AbortController();
  const r = await fetch(`${base}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: controller.signal,
    body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 200, stream: true }),
  });
  assert.equal(r.status, 200);
  const reader = r.body.getReader();
  await reader.read();
  controller.abort();
  return 'hung up';
}
async function status(body) {
  const r = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
  await r.text();
  return r.status;
}

const cancelledBefore = (await health()).cancelled;
const together = await Promise.all([
  ...prompts.map((_, i) => request(i)),
  hangUp(),
  status('{"prompt": "hi", "max_tokens": '),
  status('{"prompt": "hi", "temperature": "hot"}'),
]);
for (let i = 0; i < prompts.length; ++i)
  assert.equal(together[i], alone[i], `request ${i}: at once ${JSON.stringify(together[i])}, alone ${JSON.stringify(alone[i])}`);
assert.deepEqual(together.slice(prompts.length), ['hung up', 400, 400]);
log('the same 8 at once (beside a hang-up and two bad requests) answered the same text');

let h = await health();
for (let k = 0; k < 100 && h.cancelled <= cancelledBefore; ++k) {
  await new Promise((r) => setTimeout(r, 100));
  h = await health();
}
assert.ok(h.cancelled > cancelledBefore, 'the hung-up request was not cancelled');
const metrics = await (await fetch(`${base}/metrics`)).text();
assert.match(metrics, /^vkllm_slots 8$/m);
assert.match(metrics, /^vkllm_slots_busy 0$/m);
log('the hang-up was cancelled; /metrics reports 8 slots, none busy');
