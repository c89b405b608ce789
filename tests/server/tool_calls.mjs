// tools and tool_choice through the official `openai` npm client, on zoo-dense given a real
// model's chat template (TEMPLATE names it: a Hermes/Qwen, Llama 3.x or Mistral one): a
// required and a named call are parsed into tool_calls whose arguments validate against the
// function's parameters, whole and streamed (and two choices streamed), with finish_reason
// "tool_calls"; "auto" answers;
// a conversation with an assistant's calls and the tool's answers is rendered back.
// Run by run_server_test.sh with BASE_URL=http://127.0.0.1:PORT and TEMPLATE.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const base = process.env.BASE_URL;
const template = process.env.TEMPLATE;
assert.ok(base && template, 'BASE_URL and TEMPLATE must be set');
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 300_000 });
const log = (...a) => console.log(`tool_calls (${template}):`, ...a);
const model = (await client.models.list()).data[0].id;
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];

const weather = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 16 }, unit: { enum: ['celsius', 'fahrenheit'] }, days: { type: 'integer' } },
  required: ['city', 'unit'], additionalProperties: false,
};
const add = {
  type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'], additionalProperties: false,
};
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: weather } },
  { type: 'function', function: { name: 'add', description: 'a + b', parameters: add } },
];

// The arguments as the function's parameters allow them (the subset these schemas use).
function checkArguments(call) {
  const schema = tools.find((t) => t.function.name === call.function.name)?.function.parameters;
  assert.ok(schema, `a call of a known function: ${call.function.name}`);
  const args = JSON.parse(call.function.arguments);
  for (const r of schema.required) assert.ok(r in args, `${call.function.name}: '${r}' given in ${call.function.arguments}`);
  for (const [k, v] of Object.entries(args)) {
    const p = schema.properties[k];
    assert.ok(p, `${call.function.name}: '${k}' is a parameter`);
    if (p.enum) assert.ok(p.enum.includes(v), `${k}: ${v} in the enum`);
    if (p.type === 'string') assert.ok(typeof v === 'string' && [...v].length <= p.maxLength, `${k}: a short string`);
    if (p.type === 'integer') assert.ok(Number.isInteger(v), `${k}: an integer`);
    if (p.type === 'number') assert.equal(typeof v, 'number', `${k}: a number`);
  }
  return args;
}

// ---- required: a call of one of the tools ----
const required = await client.chat.completions.create({
  model, messages, tools, tool_choice: 'required', temperature: 0, max_tokens: 120 });
const rc = required.choices[0];
assert.equal(rc.finish_reason, 'tool_calls', JSON.stringify(rc.message));
assert.equal(rc.message.tool_calls.length, 1);
// Ids as OpenAI writes them, or as Mistral's templates require (9 letters or digits).
assert.match(rc.message.tool_calls[0].id, template.startsWith('mistral') ? /^[a-zA-Z0-9]{9}$/ : /^call_[a-zA-Z0-9]{24}$/);
assert.equal(rc.message.tool_calls[0].type, 'function');
checkArguments(rc.message.tool_calls[0]);
log('required:', rc.message.tool_calls[0].function.name, rc.message.tool_calls[0].function.arguments);

// ---- a named function, streamed: the call comes as a tool_calls delta ----
const stream = await client.chat.completions.create({
  model, messages, tools, tool_choice: { type: 'function', function: { name: 'add' } }, temperature: 0.7, seed: 5,
  max_tokens: 120, stream: true });
const calls = [];
let finish = null;
let content = '';
for await (const chunk of stream) {
  const d = chunk.choices[0]?.delta ?? {};
  content += d.content ?? '';
  for (const c of d.tool_calls ?? []) calls[c.index] = { ...c, function: { ...c.function } };
  finish = chunk.choices[0]?.finish_reason ?? finish;
}
assert.equal(finish, 'tool_calls');
assert.equal(calls.length, 1);
assert.equal(calls[0].function.name, 'add');
checkArguments(calls[0]);
assert.equal(content, '', 'a forced call has no content');
log('named, streamed:', calls[0].function.arguments);

// ---- two choices, streamed: each choice's call under its own index ----
const perChoice = [[], []];
const finishes = [null, null];
for await (const chunk of await client.chat.completions.create({
  model, messages, tools, tool_choice: { type: 'function', function: { name: 'add' } }, temperature: 0.7, seed: 6,
  max_tokens: 120, stream: true, n: 2 })) {
  for (const c of chunk.choices) {
    for (const t of c.delta?.tool_calls ?? []) perChoice[c.index][t.index] = { ...t, function: { ...t.function } };
    finishes[c.index] = c.finish_reason ?? finishes[c.index];
  }
}
assert.deepEqual(finishes, ['tool_calls', 'tool_calls']);
for (const choiceCalls of perChoice) {
  assert.equal(choiceCalls.length, 1);
  checkArguments(choiceCalls[0]);
}
log('n: 2, streamed:', perChoice.map((c) => c[0].function.arguments).join(' '));

// ---- auto: the model may answer in text (a small story model does) ----
const auto = await client.chat.completions.create({ model, messages, tools, temperature: 0, max_tokens: 8 });
const ac = auto.choices[0];
assert.ok(['stop', 'length', 'tool_calls'].includes(ac.finish_reason));
if (ac.finish_reason !== 'tool_calls') assert.equal(typeof ac.message.content, 'string');
log('auto:', ac.finish_reason);

// ---- the call and its result rendered back into the conversation ----
const call = rc.message.tool_calls[0];
const followUp = await client.chat.completions.create({
  model, tools, temperature: 0, max_tokens: 4,
  messages: [...messages, { role: 'assistant', content: null, tool_calls: [call] },
    { role: 'tool', tool_call_id: call.id, content: '{"temperature": 21}' }],
});
assert.ok(followUp.usage.prompt_tokens > required.usage.prompt_tokens, 'the call and its result are in the prompt');
log('a tool result rendered back:', followUp.usage.prompt_tokens, 'prompt tokens');

// ---- refused: a named function not among the tools, parameters that cannot be enforced ----
await assert.rejects(client.chat.completions.create({
  model, messages, tools, tool_choice: { type: 'function', function: { name: 'nope' } }, max_tokens: 4 }),
(e) => e instanceof OpenAI.BadRequestError && e.param === 'tool_choice');
await assert.rejects(client.chat.completions.create({
  model, messages, tool_choice: 'required', max_tokens: 4,
  tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { x: { type: 'string', pattern: 'a' } } } } }] }),
(e) => e instanceof OpenAI.BadRequestError && e.param === 'tools' && e.message.includes("'pattern'"));
log('refusals answered 400');
