// peer.js runs Telnyx's own Node library (the "telnyx" package pinned in
// e2e/package.json) against package telnyx's Go code, as an implementation
// not ours. It reads one JSON job on stdin and writes one JSON result on
// stdout:
//
//   verify: [{name, publicKey, body, signature, timestamp}]
//     each checked with client.webhooks.unwrap, the library's webhook
//     verification; result.verified: [{name, ok, error}]
//   sign: [{name, body, timestamp}]
//     each signed with a fresh Ed25519 key of node's crypto, over
//     timestamp + "|" + body; result.publicKey (base64, 32 bytes) and
//     result.signed: [{name, body, timestamp, signature, selfVerified}],
//     selfVerified being the library's verdict on the signature
//   send: {baseURL, apiKey, messages: [params]}
//     each sent with client.messages.send; result.sent: [{id} or
//     {status, errorClass, error}]
'use strict';

const crypto = require('crypto');
const Telnyx = require('telnyx');

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on('data', (c) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

function headers(signature, timestamp) {
  const h = {};
  if (signature !== '') h['telnyx-signature-ed25519'] = signature;
  if (timestamp !== '') h['telnyx-timestamp'] = timestamp;
  return h;
}

async function verifyWithLibrary(publicKey, body, signature, timestamp) {
  const client = new Telnyx({ apiKey: 'unused', publicKey });
  try {
    await client.webhooks.unwrap(body, { headers: headers(signature, timestamp) });
    return { ok: true };
  } catch (err) {
    return { ok: false, error: `${err.name}: ${err.message}` };
  }
}

async function verifyAll(items) {
  const out = [];
  for (const it of items) {
    const r = await verifyWithLibrary(it.publicKey, it.body, it.signature, it.timestamp);
    out.push({ name: it.name, ...r });
  }
  return out;
}

async function signAll(items) {
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ed25519');
  // The raw key is the last 32 bytes of its SubjectPublicKeyInfo encoding.
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const b64 = raw.toString('base64');
  const signed = [];
  for (const it of items) {
    const message = Buffer.from(`${it.timestamp}|${it.body}`, 'utf8');
    const signature = crypto.sign(null, message, privateKey).toString('base64');
    const self = await verifyWithLibrary(b64, it.body, signature, it.timestamp);
    signed.push({ name: it.name, body: it.body, timestamp: it.timestamp, signature, selfVerified: self.ok });
  }
  return { publicKey: b64, signed };
}

async function sendAll(job) {
  const client = new Telnyx({ apiKey: job.apiKey, baseURL: job.baseURL, maxRetries: 0, timeout: 10000 });
  const out = [];
  for (const params of job.messages) {
    try {
      const res = await client.messages.send(params);
      out.push({ id: res.data && res.data.id });
    } catch (err) {
      out.push({ status: err.status, errorClass: err.constructor.name, error: err.error });
    }
  }
  return out;
}

async function main() {
  const job = JSON.parse(await readStdin());
  const result = {};
  if (job.verify) result.verified = await verifyAll(job.verify);
  if (job.sign) Object.assign(result, await signAll(job.sign));
  if (job.send) result.sent = await sendAll(job.send);
  process.stdout.write(JSON.stringify(result) + '\n');
}

main().catch((err) => {
  process.stderr.write(`peer.js: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
