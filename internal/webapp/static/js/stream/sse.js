// Reading Server-Sent Events from a fetch body (the WHATWG parsing rules
// the app needs: data, event and id fields, comments, any line ending).

// readSSE calls onMessage(msg) for each message of body ({data, event,
// id}; a message may be an id alone) and onChunk() for each piece read
// (to see that the connection is alive). It returns when the body ends;
// an abort throws.
export async function readSSE(body, onMessage, onChunk = () => {}) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let msg = {};
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onChunk();
    buf += value;
    let nl;
    while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + (buf[nl] === '\r' && buf[nl + 1] === '\n' ? 2 : 1));
      if (line === '') {
        if (msg.data !== undefined || msg.event || msg.id !== undefined) onMessage(msg);
        msg = {};
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? '' : line.slice(colon + 1);
      if (val.startsWith(' ')) val = val.slice(1);
      if (field === 'data') msg.data = msg.data === undefined ? val : msg.data + '\n' + val;
      else if (field === 'event') msg.event = val;
      else if (field === 'id' && !val.includes('\0')) msg.id = val;
    }
  }
}
