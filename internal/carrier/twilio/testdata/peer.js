// peer.js runs Twilio's own Node library (the "twilio" package pinned in
// e2e/package.json) against package twilio's Go code, as an implementation
// not ours. It reads one JSON job on stdin and writes one JSON result on
// stdout. Parameters travel as {name: [values]}; a name with one value is
// handed to the library as a string, as a form parser would give it.
//
//   sign: [{name, authToken, url, params}]
//     each signed with getExpectedTwilioSignature; result.signed:
//     [{name, signature}]
//   validate: [{name, authToken, url, params, signature}]
//     each checked with validateRequest; result.validated: [{name, ok}]
//   post: {target, authToken, publicURL, forms: [{name, params, encoder,
//          signToken, signURL}]}
//     each form POSTed to target + "?case=" + name as Twilio would send a
//     webhook (the case is not signed, for the receiver to tell them apart): the body
//     encoded by URLSearchParams ("+" for a space) or by node's querystring
//     ("%20"), signed by the library over signURL (default publicURL) with
//     signToken (default authToken); result.posted: [{name, status}]
//   send: {apiBase, accountSid, authToken, messages: [params]}
//     each sent with client.messages.create by a client whose requests to
//     https://api.twilio.com go to apiBase instead; result.sent: [{sid,
//     status} or {error: {className, status, code, message, moreInfo}}]
'use strict';

const querystring = require('querystring');
const twilio = require('twilio');

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on('data', (c) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

// asParams turns {name: [values]} into what express.urlencoded would give.
function asParams(values) {
  const out = {};
  for (const [name, vs] of Object.entries(values || {})) {
    out[name] = vs.length === 1 ? vs[0] : vs;
  }
  return out;
}

function signAll(items) {
  return items.map((it) => ({
    name: it.name,
    signature: twilio.getExpectedTwilioSignature(it.authToken, it.url, asParams(it.params)),
  }));
}

function validateAll(items) {
  return items.map((it) => ({
    name: it.name,
    ok: twilio.validateRequest(it.authToken, it.signature, it.url, asParams(it.params)),
  }));
}

function encode(values, encoder) {
  if (encoder === 'querystring') return querystring.stringify(asParams(values));
  const p = new URLSearchParams();
  for (const [name, vs] of Object.entries(values)) for (const v of vs) p.append(name, v);
  return p.toString();
}

async function postAll(job) {
  const out = [];
  for (const f of job.forms) {
    const signature = twilio.getExpectedTwilioSignature(
      f.signToken || job.authToken, f.signURL || job.publicURL, asParams(f.params));
    const res = await fetch(`${job.target}?case=${encodeURIComponent(f.name)}`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8',
        'X-Twilio-Signature': signature,
        'User-Agent': 'TwilioProxy/1.1',
      },
      body: encode(f.params, f.encoder),
    });
    await res.text();
    out.push({ name: f.name, status: res.status });
  }
  return out;
}

// RedirectingClient is the library's own request client, sending what the
// library asks of https://api.twilio.com to the fake API instead.
class RedirectingClient extends twilio.RequestClient {
  constructor(apiBase) {
    super({ timeout: 10000 });
    this.apiBase = apiBase;
  }

  request(opts) {
    const u = new URL(opts.uri);
    if (u.origin !== 'https://api.twilio.com') {
      return Promise.reject(new Error(`the library asked for ${u.origin}`));
    }
    return super.request({ ...opts, uri: this.apiBase + u.pathname + u.search });
  }
}

async function sendAll(job) {
  const client = twilio(job.accountSid, job.authToken, { httpClient: new RedirectingClient(job.apiBase) });
  const out = [];
  for (const params of job.messages) {
    try {
      const m = await client.messages.create(params);
      out.push({ sid: m.sid, status: m.status });
    } catch (err) {
      out.push({
        error: {
          className: err.constructor.name, status: err.status, code: err.code,
          message: err.message, moreInfo: err.moreInfo,
        },
      });
    }
  }
  return out;
}

async function main() {
  const job = JSON.parse(await readStdin());
  const result = {};
  if (job.sign) result.signed = signAll(job.sign);
  if (job.validate) result.validated = validateAll(job.validate);
  if (job.post) result.posted = await postAll(job.post);
  if (job.send) result.sent = await sendAll(job.send);
  // Kept-alive sockets must not hold the process open.
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0));
}

main().catch((err) => {
  process.stderr.write(`peer.js: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
