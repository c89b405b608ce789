// A load test of vkllm serve (not part of the test suite): at each concurrency level, that many
// clients send streamed chat requests back to back until REQUESTS have been answered, and the
// level's aggregate tokens/s, time to first token and time between tokens (percentiles over
// every request and token) are printed. Loopback servers only. Run by scripts/load-test.sh;
// BASE_URL=http://127.0.0.1:PORT, CONCURRENCY="1 4 16", REQUESTS=16, MAX_TOKENS=32.
import assert from 'node:assert/strict';

const base = process.env.BASE_URL;
assert.ok(base, 'BASE_URL must be set');
const host = new URL(base).hostname;
assert.ok(['127.0.0.1', 'localhost', '[::1]'].includes(host), `a loopback server only, not ${host}`);
const levels = (process.env.CONCURRENCY ?? '1 4 16').trim().split(/\s+/).map(Number);
const requests = Number(process.env.REQUESTS ?? 16);
const maxTokens = Number(process.env.MAX_TOKENS ?? 32);
assert.ok(levels.every((c) => c >= 1 && c <= 256) && requests >= 1 && requests <= 10000 && maxTokens >= 1 && maxTokens <= 4096,
  'CONCURRENCY in 1..256, REQUESTS in 1..10000, MAX_TOKENS in 1..4096');

const prompts = ['Once upon a time', 'The little dog', 'One day, a girl named Lily', 'Tom had a red ball'];

// One streamed request: the times of its content chunks and its completion tokens.
async function one(i) {
  const start = performance.now();
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      messages: [{ role: 'user', content: prompts[i % prompts.length] }], max_tokens: maxTokens, temperature: 0.8,
      seed: i, stream: true, stream_options: { include_usage: true },
    }),
  });
  if (r.status !== 200) return { error: `${r.status} ${await r.text()}` };
  const times = [];
  let tokens = 0;
  let rest = '';
  const decoder = new TextDecoder();
  for await (const bytes of r.body) {
    rest += decoder.decode(bytes, { stream: true });
    let end;
    while ((end = rest.indexOf('\n\n')) >= 0) {
      const event = rest.slice(0, end);
      rest = rest.slice(end + 2);
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
      const chunk = JSON.parse(event.slice(6));
      if (chunk.error) return { error: JSON.stringify(chunk.error) };
      if (chunk.usage) tokens = chunk.usage.completion_tokens;
      if (chunk.choices?.[0]?.delta?.content) times.push(performance.now() - start);
    }
  }
  return { times, tokens, seconds: (performance.now() - start) / 1000 };
}

const percentile = (values, p) => {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const ms = (x) => (Number.isNaN(x) ? '-' : x.toFixed(0).padStart(6));

console.log(`load: ${requests} streamed requests per level, max_tokens ${maxTokens}, temperature 0.8`);
console.log('clients  requests  errors  tokens/s   req/s  | first token ms p50    p90    p99 | between tokens ms p50    p90    p99');
for (const clients of levels) {
  let next = 0;
  const results = [];
  const t0 = performance.now();
  await Promise.all(Array.from({ length: clients }, async () => {
    while (next < requests) results.push(await one(next++));
  }));
  const seconds = (performance.now() - t0) / 1000;
  const ok = results.filter((r) => !r.error);
  const errors = results.filter((r) => r.error);
  const tokens = ok.reduce((n, r) => n + r.tokens, 0);
  const first = ok.filter((r) => r.times.length).map((r) => r.times[0]);
  const between = ok.flatMap((r) => r.times.slice(1).map((t, k) => t - r.times[k]));
  console.log(`${String(clients).padStart(7)}  ${String(results.length).padStart(8)}  ${String(errors.length).padStart(6)}  ` +
    `${(tokens / seconds).toFixed(1).padStart(8)}  ${(ok.length / seconds).toFixed(2).padStart(6)}  |` +
    `              ${ms(percentile(first, 50))} ${ms(percentile(first, 90))} ${ms(percentile(first, 99))} |` +
    `                 ${ms(percentile(between, 50))} ${ms(percentile(between, 90))} ${ms(percentile(between, 99))}`);
  for (const e of errors.slice(0, 3)) console.log('  error:', e.error);
}
