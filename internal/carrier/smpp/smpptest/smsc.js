// An SMSC built on node-smpp (e2e/node_modules/smpp), the independent peer
// of the package's TestNodeSMSC. It binds system_id "esme" with password
// "secret", answers submit_sm with its own message ids, and reports what it
// decoded, one JSON object a line on stdout. Commands arrive as JSON lines
// on stdin; it exits when stdin closes.
'use strict';
const smpp = require('smpp');
const readline = require('readline');

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
let session = null;
let nextId = 1;
const refuse = [];
// A peer that vanishes (a killed process) resets its socket: reported as
// session_error, not error, once a test says it expects it.
let tolerateDrops = false;
let refuseBinds = 0;

const server = smpp.createServer({}, (s) => {
	session = s;
	s.on('error', (e) => out({ event: tolerateDrops ? 'session_error' : 'error', error: String(e) }));
	s.on('bind_transceiver', (pdu) => {
		out({ event: 'bind', at: Date.now(), system_id: pdu.system_id, password: pdu.password,
			system_type: pdu.system_type, interface_version: pdu.interface_version });
		const ok = pdu.system_id === 'esme' && pdu.password === 'secret';
		if (ok && refuseBinds > 0) { // an SMSC still starting
			refuseBinds--;
			s.send(pdu.response({ command_status: smpp.ESME_RBINDFAIL, system_id: 'node-smsc' }));
			return;
		}
		s.send(pdu.response({ command_status: ok ? 0 : smpp.ESME_RINVPASWD, system_id: 'node-smsc' }));
	});
	s.on('submit_sm', (pdu) => {
		const sm = pdu.short_message || {};
		const ev = {
			event: 'submit_sm', at: Date.now(), service_type: pdu.service_type,
			source_addr_ton: pdu.source_addr_ton, source_addr_npi: pdu.source_addr_npi, source_addr: pdu.source_addr,
			dest_addr_ton: pdu.dest_addr_ton, dest_addr_npi: pdu.dest_addr_npi, destination_addr: pdu.destination_addr,
			esm_class: pdu.esm_class, registered_delivery: pdu.registered_delivery, data_coding: pdu.data_coding,
			message: typeof sm.message === 'string' ? sm.message : null,
			udh: (sm.udh || []).map((b) => b.toString('hex')),
		};
		const status = refuse.shift() || 0;
		if (status) {
			ev.refused = status;
			out(ev);
			s.send(pdu.response({ command_status: status }));
			return;
		}
		ev.message_id = 'node' + nextId++;
		out(ev);
		s.send(pdu.response({ message_id: ev.message_id }));
	});
	s.on('enquire_link', (pdu) => s.send(pdu.response()));
	s.on('unbind', (pdu) => { s.send(pdu.response()); s.close(); });
});

function deliver(fields) {
	session.deliver_sm(fields, (resp) => out({ event: 'deliver_sm_resp', status: resp.command_status }));
}

const commands = {
	// A delivery receipt in the text of Appendix B, optionally with the
	// receipted_message_id and message_state parameters.
	receipt(c) {
		const text = `id:${c.id} sub:001 dlvrd:001 submit date:2611281015 done date:2611281016 stat:${c.stat} err:000 text:${c.text || ''}`;
		const f = { source_addr_ton: 1, source_addr_npi: 1, source_addr: c.from, dest_addr_ton: 1, dest_addr_npi: 1,
			destination_addr: c.to, esm_class: smpp.ESM_CLASS.MC_DELIVERY_RECEIPT, data_coding: 0, short_message: text };
		if (c.tlv) {
			f.receipted_message_id = c.tlv_id || c.id;
			f.message_state = smpp.MESSAGE_STATE.DELIVERED;
		}
		deliver(f);
	},
	// An inbound text: one part encoded as node-smpp chooses (data_coding
	// null), or the given parts with a user data header and data_coding.
	inbound(c) {
		const base = { source_addr_ton: 1, source_addr_npi: 1, source_addr: c.from, dest_addr_ton: 1, dest_addr_npi: 1,
			destination_addr: c.to };
		if (!c.parts) {
			deliver(Object.assign(base, { short_message: c.text }));
			return;
		}
		c.parts.forEach((p, i) => {
			deliver(Object.assign({}, base, { data_coding: c.data_coding,
				short_message: { udh: Buffer.from([5, 0, 3, c.ref, c.parts.length, i + 1]), message: p } }));
		});
	},
	throttle(c) {
		for (let i = 0; i < c.n; i++) refuse.push(c.status || smpp.ESME_RTHROTTLED);
		out({ event: 'throttling', n: c.n });
	},
	enquire() { session.enquire_link({}, (resp) => out({ event: 'enquire_link_resp', status: resp.command_status })); },
	drop() { session.destroy(); },
	tolerate() { tolerateDrops = true; },
	// The next n binds are refused (ESME_RBINDFAIL), as by an SMSC that is
	// restarting: with drop, the ESME stays unbound for a while.
	refusebinds(c) { refuseBinds = c.n; out({ event: 'refusing_binds', n: c.n }); },
};

server.listen(0, '127.0.0.1', () => {
	out({ event: 'listening', port: server.address().port });
	const rl = readline.createInterface({ input: process.stdin });
	rl.on('line', (line) => {
		const c = JSON.parse(line);
		try {
			commands[c.cmd](c);
		} catch (e) {
			out({ event: 'error', error: String(e) });
		}
	});
	rl.on('close', () => process.exit(0));
});
