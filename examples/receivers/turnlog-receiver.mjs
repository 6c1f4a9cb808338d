// A receiver for turnlog's HTTP tools, in Node's standard library (ES module; the
// types are in turnlog-receiver.d.ts for TypeScript).
//
// It checks each call's signature (docs/tools.md "Checking the signature"), applies
// each Idempotency-Key once and answers a repeated key with the first answer (the
// `dedupe: idempotency_key` contract), and answers failures in the shapes turnlog
// shows the model: a 4xx with {"error": {"message": ...}} is a refusal the model reads;
// a 5xx says the outcome is unknown.
//
//   import { Receiver, Refusal } from './turnlog-receiver.mjs';
//   const r = new Receiver([Buffer.from(secret)], { '/notes': async (args, call) => {
//     if (!args.text) throw new Refusal(422, 'text is empty');
//     return { id: await save(args.text) };
//   } });
//   r.server().listen(8099, '127.0.0.1');
//
// Run as a program, it serves an example route, /notes (see main below).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

export const TOLERANCE = 300; // seconds a signature's time may be off this clock

/** A failure the model is told: status (4xx), and the message it reads. */
export class Refusal extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** Whether a request is signed by one of secrets (Buffers), within tolerance. */
export function verify(secrets, headers, method, target, body, now = Date.now() / 1000, tolerance = TOLERANCE) {
  const key = headers['idempotency-key'] || '';
  const parts = String(headers['turnlog-signature'] || '').split(',');
  const t = Number((parts.find((p) => p.startsWith('t=')) || '').slice(2));
  const sigs = parts.filter((p) => p.startsWith('v1=')).map((p) => p.slice(3));
  if (!Number.isInteger(t) || Math.abs(now - t) > tolerance || !key || sigs.length === 0) return false;
  const payload = Buffer.concat([Buffer.from(`${t}.${key}.${method}.${target}.`), body]);
  for (const secret of secrets) {
    const want = Buffer.from(createHmac('sha256', secret).update(payload).digest('hex'));
    for (const s of sigs) {
      const got = Buffer.from(s);
      if (got.length === want.length && timingSafeEqual(got, want)) return true;
    }
  }
  return false;
}

/** Routes signed POSTs to handlers, each key applied once. */
export class Receiver {
  constructor(secrets, routes) {
    this.secrets = secrets;
    this.routes = routes;
    this.answers = new Map(); // Idempotency-Key -> Promise of [status, body]: the first answer
  }

  /** [status, JSON body] for one request. */
  async handle(method, target, headers, body) {
    const route = this.routes[target.split('?')[0]];
    if (method !== 'POST' || !route) return [404, { error: { message: 'no such tool here' } }];
    if (!verify(this.secrets, headers, method, target, body)) return [401, { error: { message: 'the signature does not verify' } }];
    const key = headers['idempotency-key'];
    if (!this.answers.has(key)) {
      // A repeat while the first runs waits for it: the first answer, once.
      this.answers.set(key, (async () => {
        const call = Object.fromEntries(Object.entries(headers).filter(([k]) => k.startsWith('turnlog-')));
        call.key = key;
        try {
          return [200, await route(JSON.parse(body.length ? body.toString() : '{}'), call)];
        } catch (e) {
          if (e instanceof Refusal) return [e.status, { error: { message: e.message } }];
          this.answers.delete(key); // not applied as far as anyone knows: it may come again
          return [500, { error: { message: `the receiver failed: ${e.message}` } }];
        }
      })());
    }
    return this.answers.get(key);
  }

  server() {
    return createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', async () => {
        const [status, out] = await this.handle(req.method, req.url, req.headers, Buffer.concat(chunks));
        const data = Buffer.from(JSON.stringify(out));
        res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': data.length });
        res.end(data);
      });
    });
  }
}

// The example: /notes adds a note; the first call of each key answers 503 after it
// applied (as a crash would), so turnlog sends it again and gets the first answer. It
// prints 'listening on PORT' and, when stdin closes, how many notes it holds.
async function main() {
  const secret = Buffer.from(process.env[process.argv[2] || 'NOTES_SECRET']);
  const notes = [];
  const failedOnce = new Set();
  const r = new Receiver([secret], {
    '/notes': async (args) => {
      if (!String(args.text || '').trim()) throw new Refusal(422, "text is empty: give the note's text");
      notes.push(args.text);
      return { id: notes.length, text: args.text };
    },
  });
  const inner = r.handle.bind(r);
  r.handle = async (method, target, headers, body) => {
    const [status, out] = await inner(method, target, headers, body);
    const key = headers['idempotency-key'] || '';
    if (status === 200 && !failedOnce.has(key)) {
      failedOnce.add(key);
      return [503, { error: { message: 'lost the answer' } }];
    }
    return [status, out];
  };
  const srv = r.server();
  srv.listen(0, '127.0.0.1', () => console.log(`listening on ${srv.address().port}`));
  process.stdin.resume();
  process.stdin.on('end', () => {
    console.log(`notes ${notes.length}`);
    process.exit(0);
  });
}

if (import.meta.url === `file://${process.argv[1]}`) main();
