// vkllm serve through the official `openai` npm client: models, chat and completions with and
// without streaming, OpenAI's errors, a client that leaves mid-answer, and a bounded load test
// (every answer whole, the server's memory flat). Run by run_server_test.sh with
// BASE_URL=http://127.0.0.1:PORT/v1 and SERVER_PID.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';

const baseURL = process.env.BASE_URL;
const serverPid = process.env.SERVER_PID;
assert.ok(baseURL && serverPid, 'BASE_URL and SERVER_PID must be set');
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
const health = async () => (await fetch(baseURL.replace(/\/v1$/, '/health'))).json();
const rssKiB = () => Number(readFileSync(`/proc/${serverPid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.log('openai_client:', ...a);

async function waitFor(what, predicate, seconds = 60) {
  for (let i = 0; i < seconds * 10; ++i) {
    if (await predicate()) return;
    await sleep(100);
  }
  assert.fail(`timed out waiting for ${what}`);
}

// ---- models ----
const models = await client.models.list();
assert.equal(models.data.length, 1);
const model = models.data[0].id;
assert.equal(models.data[0].object, 'model');
log('model', model);

// ---- chat, not streaming ----
const messages = [{ role: 'user', content: 'Once upon a time' }];
const chat = await client.chat.completions.create({ model, messages, max_tokens: 6, temperature: 0 });
assert.equal(chat.object, 'chat.completion');
assert.equal(chat.choices.length, 1);
assert.equal(chat.choices[0].message.role, 'assistant');
assert.equal(typeof chat.choices[0].message.content, 'string');
assert.ok(chat.choices[0].message.content.length > 0, 'an answer');
assert.equal(chat.choices[0].finish_reason, 'length');
assert.equal(chat.usage.completion_tokens, 6);
assert.ok(chat.usage.prompt_tokens > 0);
assert.equal(chat.usage.total_tokens, chat.usage.prompt_tokens + 6);
log('chat:', JSON.stringify(chat.choices[0].message.content));

// The chat went through the model's template (run_server_test.sh adds "role: content\n" per
// message, then "assistant:"): the same greedy text as completing that text.
const rendered = await client.completions.create(
  { model, prompt: 'user: Once upon a time\nassistant:', max_tokens: 6, temperature: 0 });
assert.equal(chat.choices[0].message.content, rendered.choices[0].text, 'the chat prompt is the template\'s text');
assert.equal(chat.usage.prompt_tokens, rendered.usage.prompt_tokens);

// ---- chat, streaming: the same greedy text in pieces ----
let streamed = '';
let finish = null;
let usage = null;
let chunks = 0;
const stream = await client.chat.completions.create({
  model, messages, max_tokens: 6, temperature: 0, stream: true, stream_options: { include_usage: true },
});
for await (const chunk of stream) {
  assert.equal(chunk.object, 'chat.completion.chunk');
  ++chunks;
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    if (c.delta?.content) streamed += c.delta.content;
    if (c.finish_reason) finish = c.finish_reason;
  }
}
assert.equal(streamed, chat.choices[0].message.content, 'streaming gives the same greedy text');
assert.equal(finish, 'length');
assert.ok(chunks >= 3, `a stream of chunks (got ${chunks})`);
assert.deepEqual(usage, chat.usage);

// ---- completions, both ways; a stop string ----
const prompt = 'Once upon a time';
const completion = await client.completions.create({ model, prompt, max_tokens: 8, temperature: 0 });
assert.equal(completion.object, 'text_completion');
const text = completion.choices[0].text;
assert.ok(text.length > 0);
let streamedText = '';
for await (const chunk of await client.completions.create({ model, prompt, max_tokens: 8, temperature: 0, stream: true }))
  streamedText += chunk.choices[0]?.text ?? '';
assert.equal(streamedText, text);
const words = text.trim().split(/\s+/);
const stop = ' ' + words[Math.min(2, words.length - 1)];
const stopped = await client.completions.create({ model, prompt, max_tokens: 8, temperature: 0, stop: [stop] });
assert.equal(stopped.choices[0].finish_reason, 'stop');
assert.equal(stopped.choices[0].text, text.slice(0, text.indexOf(stop)), 'the text up to the stop string');
log('completion:', JSON.stringify(text), 'stopped at', JSON.stringify(stop));

// ---- errors as the client sees them ----
await assert.rejects(client.chat.completions.create({ model, messages, temperature: 'hot' }),
  (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'temperature');
await assert.rejects(client.chat.completions.create({ model: 'no-such-model', messages }),
  (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
await assert.rejects(client.chat.completions.create({ model, messages: [] }),
  (e) => e instanceof OpenAI.BadRequestError && /at least one message/.test(e.message));

// ---- a client that leaves mid-answer stops its generation ----
const cancelledBefore = (await health()).cancelled;
const controller = new AbortController();
const long = await client.completions.create(
  { model, prompt, max_tokens: 200, stream: true }, { signal: controller.signal });
try {
  for await (const chunk of long) {
    if (chunk.choices[0]?.text) controller.abort();
  }
} catch (e) {
  assert.ok(e.name === 'APIUserAbortError' || e.name === 'AbortError', `aborted (${e.name})`);
}
await waitFor('the abandoned stream to be cancelled', async () => (await health()).cancelled > cancelledBefore);
log('an abandoned stream was cancelled');

// ---- load: 200 requests from 8 concurrent clients; every answer whole ----
const prompts = ['Once upon a time', 'The cat', 'Tom and Mia', 'One day', 'In the garden'];
const expected = {};
for (const p of prompts)  // greedy references, one at a time
  expected[p] = (await client.completions.create({ model, prompt: p, max_tokens: 2, temperature: 0 })).choices[0].text;
const rssBefore = rssKiB();
const total = 200;
const concurrency = 8;
let next = 0;
let done = 0;
let rssHalf = 0;
async function loadClient(id) {
  while (next < total) {
    const i = next++;
    const p = prompts[i % prompts.length];
    let got = '';
    if (i % 2 === 0) {
      const r = await client.completions.create({ model, prompt: p, max_tokens: 2, temperature: 0 });
      assert.equal(r.choices[0].finish_reason, 'length');
      assert.equal(r.usage.completion_tokens, 2);
      got = r.choices[0].text;
    } else {
      let fin = null;
      for await (const c of await client.completions.create({ model, prompt: p, max_tokens: 2, temperature: 0, stream: true })) {
        got += c.choices[0]?.text ?? '';
        fin = c.choices[0]?.finish_reason ?? fin;
      }
      assert.equal(fin, 'length', `request ${i} (client ${id}) ended`);
    }
    assert.equal(got, expected[p], `request ${i} (client ${id}): the whole answer for ${JSON.stringify(p)}`);
    if (++done === total / 2) rssHalf = rssKiB();
  }
}
const t0 = Date.now();
await Promise.all(Array.from({ length: concurrency }, (_, id) => loadClient(id)));
const rssAfter = rssKiB();
log(`load: ${total} requests from ${concurrency} clients in ${((Date.now() - t0) / 1000).toFixed(1)} s; ` +
    `server RSS ${rssBefore} KiB before, ${rssHalf} KiB halfway, ${rssAfter} KiB after`);
assert.equal(done, total);
// Flat: the second hundred requests grow it by less than 8 MiB, all two hundred by less than 32 MiB.
assert.ok(rssAfter - rssHalf < 8 * 1024, `RSS grew ${rssAfter - rssHalf} KiB over the second half`);
assert.ok(rssAfter - rssBefore < 32 * 1024, `RSS grew ${rssAfter - rssBefore} KiB over the load`);
const h = await health();
assert.equal(h.waiting, 0);
log('all checks passed');
