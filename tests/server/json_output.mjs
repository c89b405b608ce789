// response_format through the official `openai` npm client: json_object answers parse as JSON
// objects, json_schema answers parse and validate against the schema on every request of a
// seeded sampling run (streamed and not), and a schema keyword the server cannot enforce is
// answered 400 naming it. Run by run_server_test.sh with BASE_URL=http://127.0.0.1:PORT.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const base = process.env.BASE_URL;
assert.ok(base, 'BASE_URL must be set');
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
const log = (...a) => console.log('json_output:', ...a);
const model = (await client.models.list()).data[0].id;
const messages = [{ role: 'user', content: 'Once upon a time' }];

// The errors of `value` against `schema` (the subset the server enforces), as paths.
function validate(schema, value, path = '$', defs = schema.$defs ?? {}) {
  const errors = [];
  const fail = (why) => errors.push(`${path}: ${why}`);
  if (schema.$ref) return validate(defs[schema.$ref.replace('#/$defs/', '')], value, path, defs);
  if ('const' in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) fail('not the const');
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) fail('not in the enum');
  if (schema.anyOf) {
    if (!schema.anyOf.some((s) => validate(s, value, path, defs).length === 0)) fail('matches no anyOf branch');
    return errors;
  }
  const type = Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
  switch (schema.type) {
    case undefined: break;
    case 'integer': if (!Number.isInteger(value)) fail('not an integer'); break;
    case 'object':
      if (type !== 'object') { fail(`a ${type}, not an object`); break; }
      for (const r of schema.required ?? []) if (!(r in value)) fail(`no '${r}'`);
      for (const [k, v] of Object.entries(value)) {
        if (schema.properties?.[k]) errors.push(...validate(schema.properties[k], v, `${path}.${k}`, defs));
        else if (schema.additionalProperties === false) fail(`'${k}' is not a property`);
      }
      break;
    case 'array':
      if (type !== 'array') { fail(`a ${type}, not an array`); break; }
      if (value.length < (schema.minItems ?? 0)) fail('too few items');
      if (value.length > (schema.maxItems ?? Infinity)) fail('too many items');
      value.forEach((v, i) => errors.push(...validate(schema.items ?? {}, v, `${path}[${i}]`, defs)));
      break;
    case 'string':
      if (type !== 'string') { fail(`a ${type}, not a string`); break; }
      if ([...value].length > (schema.maxLength ?? Infinity)) fail('too long');
      if ([...value].length < (schema.minLength ?? 0)) fail('too short');
      break;
    default: if (type !== schema.type) fail(`a ${type}, not a ${schema.type}`);
  }
  return errors;
}

// ---- json_object: a JSON object, the generation ended by the value's end ----
for (const temperature of [0, 0.9]) {
  const r = await client.chat.completions.create({
    model, messages, max_tokens: 200, temperature, seed: 11, response_format: { type: 'json_object' } });
  const text = r.choices[0].message.content;
  assert.equal(r.choices[0].finish_reason, 'stop', `json_object ends with the object: ${JSON.stringify(text)}`);
  const value = JSON.parse(text);
  assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value), `an object: ${text}`);
}
log('json_object answers are JSON objects');

// ---- json_schema: every answer of a seeded run validates ----
const schema = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer' },
    pet: { enum: ['cat', 'dog', 'bird'] },
    happy: { type: 'boolean' },
    tags: { type: 'array', items: { type: 'string', maxLength: 10 }, maxItems: 3 },
    owner: { anyOf: [{ type: 'null' }, { $ref: '#/$defs/person' }] },
  },
  required: ['name', 'age', 'pet', 'happy', 'tags', 'owner'],
  additionalProperties: false,
  $defs: { person: { type: 'object', properties: { id: { type: 'number' } }, required: ['id'], additionalProperties: false } },
};
const response_format = { type: 'json_schema', json_schema: { name: 'person', strict: true, schema } };
const texts = new Set();
for (let seed = 1; seed <= 6; ++seed) {
  const stream = seed % 2 === 0;
  const request = { model, messages, max_tokens: 250, temperature: 0.8, seed, response_format };
  let text = '';
  let finish = null;
  if (stream) {
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
  } else {
    const r = await client.chat.completions.create(request);
    text = r.choices[0].message.content;
    finish = r.choices[0].finish_reason;
  }
  assert.equal(finish, 'stop', `seed ${seed}: the value ended the answer: ${JSON.stringify(text)}`);
  const errors = validate(schema, JSON.parse(text));
  assert.deepEqual(errors, [], `seed ${seed}: ${text}`);
  texts.add(text);
}
assert.ok(texts.size > 1, 'different seeds sample different values');
log(`json_schema: 6 seeded answers (3 streamed) parse and validate, ${texts.size} distinct`);

// ---- what cannot be enforced is refused, naming it ----
const refused = [
  [{ type: 'string', pattern: '^a' }, 'pattern'],
  [{ type: 'integer', minimum: 3 }, 'minimum'],
  [{ type: 'object', properties: { a: { type: 'string', format: 'email', minLength: 1, not: {} } } }, 'not'],
];
for (const [s, keyword] of refused) {
  await assert.rejects(client.chat.completions.create({
    model, messages, max_tokens: 5, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: s } } }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format.json_schema.schema' && e.message.includes(`'${keyword}'`),
  `${JSON.stringify(s)} is refused naming ${keyword}`);
}
for (const [format, param] of [[{ type: 'json_schema' }, 'response_format.json_schema'],
  [{ type: 'json_object', schema: {} }, 'response_format.schema'], [{ type: 'xml' }, 'response_format']]) {
  await assert.rejects(client.chat.completions.create({ model, messages, max_tokens: 5, response_format: format }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === param, `${JSON.stringify(format)} is refused naming ${param}`);
}
log('unenforceable schemas and malformed response formats refused with 400');
