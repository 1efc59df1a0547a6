// The line screen (/app/lines/:line): what a person manages per line through
// the public API: its scheduled messages (GET, DELETE
// /sms/lines/{line}/scheduled) and its blocked senders (GET, POST, DELETE
// /sms/lines/{line}/blocked).
import { ApiError } from './api.js';
import { h, formatTime, formatPhone, formatMoney, showError, announce, emptyState, spinner } from './ui.js';
import { formatWhen } from './composer.js';

function linePath(line, rest) {
  return `/sms/lines/${encodeURIComponent(line)}${rest}`;
}

// confirmRow swaps a row's action for an inline question ("Cancel it?"
// Yes / No), focused on the safe answer's neighbour so a keyboard user sees
// it at once; a browser confirm() dialog would block the page and tests.
function confirmRow(actions, question, yesLabel, onYes) {
  const previous = [...actions.childNodes];
  const opener = document.activeElement;
  const no = h('button', { type: 'button', class: 'ln-no' }, 'No, keep it');
  const yes = h('button', { type: 'button', class: 'ln-yes danger' }, yesLabel);
  const restore = () => {
    actions.replaceChildren(...previous);
    if (opener && opener.isConnected) opener.focus();
  };
  no.addEventListener('click', restore);
  yes.addEventListener('click', async () => {
    yes.disabled = no.disabled = true;
    yes.textContent = 'Working…';
    await onYes(restore);
  });
  actions.replaceChildren(h('span', { class: 'ln-question', role: 'group', 'aria-label': question },
    h('span', {}, question), yes, no));
  actions.addEventListener('keydown', function esc(e) {
    if (e.key === 'Escape' && no.isConnected) { actions.removeEventListener('keydown', esc); restore(); }
  });
  yes.focus();
}

// renderIndex (/app/lines) lists the person's lines, each a link to its screen.
async function renderIndex(main, ctx) {
  document.title = 'Lines · Switchboard';
  const body = h('div', { class: 'ln-list' }, spinner('Loading your lines'));
  const title = h('h1', { tabindex: '-1' }, 'Lines');
  main.replaceChildren(h('div', { class: 'ln-page' }, title,
    h('p', { class: 'ln-help' }, 'Each line\'s scheduled messages and blocked senders.'), body));
  title.focus();
  try {
    const lines = await ctx.api('GET', '/sms/lines');
    if (!lines.length) {
      body.replaceChildren(emptyState('No lines', 'Your role gives you no line to text from.'));
      return;
    }
    body.replaceChildren(h('ul', { class: 'ln-rows' }, ...lines.map((l) => h('li', { class: 'ln-row' },
      h('a', { href: `/app/lines/${encodeURIComponent(l.number)}` }, l.name ? `${l.name} · ${formatPhone(l.number)}` : formatPhone(l.number))))));
  } catch (err) {
    body.replaceChildren();
    showError(body, err);
  }
}

export async function render(main, params, ctx) {
  const api = ctx.api;
  const line = params.line;
  if (!line) return renderIndex(main, ctx);
  document.title = `${formatPhone(line)}: line settings · Switchboard`;
  const phone = h('span', { class: 'ln-nowrap' }, formatPhone(line));
  const title = h('h1', { id: 'line-title', tabindex: '-1' }, h('span', { class: 'ln-eyebrow' }, 'Line settings'), phone);
  const sub = h('p', { class: 'ln-sub' });
  const schedErr = h('div', { class: 'ln-error', role: 'alert' });
  const schedBody = h('div', { class: 'ln-list' }, spinner('Loading scheduled messages'));
  const blockErr = h('div', { class: 'ln-error', role: 'alert' });
  const blockBody = h('div', { class: 'ln-list' }, spinner('Loading blocked senders'));

  const number = h('input', { id: 'block-number', name: 'number', type: 'tel', autocomplete: 'off', inputmode: 'tel', placeholder: '+1 555 123 4567' });
  const reason = h('input', { id: 'block-reason', name: 'reason', type: 'text', maxlength: '500', placeholder: 'e.g. spam' });
  const blockButton = h('button', { type: 'submit', class: 'primary' }, 'Block');
  const blockForm = h('form', { class: 'ln-block-form', 'aria-label': 'Block a sender' },
    h('div', { class: 'ln-field' }, h('label', { for: 'block-number' }, 'Number to block'), number),
    h('div', { class: 'ln-field' }, h('label', { for: 'block-reason' }, 'Reason (optional)'), reason),
    blockButton);
  blockForm.noValidate = true;
  // Blocking and cancelling need sms:write; without it the lists are read-only.
  const canWrite = !ctx.can || ctx.can.write !== false;

  main.replaceChildren(h('div', { class: 'ln-page' },
    h('p', { class: 'ln-back' }, h('a', { href: `/app/inbox/${encodeURIComponent(line)}` }, '← Back to the inbox')),
    title, sub,
    h('section', { class: 'ln-section', 'aria-labelledby': 'scheduled-title' },
      h('h2', { id: 'scheduled-title' }, 'Scheduled messages'),
      h('p', { class: 'ln-help' }, 'Messages waiting to be sent from this line, soonest first. A cancelled message is never sent or charged.'),
      schedErr, schedBody),
    h('section', { class: 'ln-section', 'aria-labelledby': 'blocked-title' },
      h('h2', { id: 'blocked-title' }, 'Blocked senders'),
      h('p', { class: 'ln-help' }, 'Texts from these numbers to this line are kept, marked blocked, and never counted as unread. The reason is for your team; the sender never sees it. This is not the STOP (opt-out) list.'),
      canWrite ? blockForm : null,
      blockErr, blockBody)));
  schedErr.hidden = blockErr.hidden = true;
  title.focus();

  function fail(box, err) {
    box.hidden = false;
    showError(box, err);
  }
  function clear(box) {
    box.replaceChildren();
    box.hidden = true;
  }

  // The line's name, if it has one (GET /sms/lines); also tells an unknown
  // line apart early.
  api('GET', '/sms/lines').then((lines) => {
    const l = (lines || []).find((x) => x.number === line);
    if (!l) {
      sub.textContent = 'This line is not one of yours.';
      return;
    }
    if (l.name) {
      phone.before(`${l.name} · `);
      document.title = `${l.name}: line settings · Switchboard`;
    } else {
      document.title = `${formatPhone(line)}: line settings · Switchboard`;
    }
  }).catch(() => {});

  // ---- scheduled messages ----
  async function loadScheduled() {
    try {
      const list = await api('GET', linePath(line, '/scheduled'));
      clear(schedErr);
      if (!list.length) {
        schedBody.replaceChildren(emptyState('Nothing scheduled', 'Schedule a message from a conversation\'s reply box ("Schedule").'));
        return;
      }
      // The API answers soonest first; keep that order.
      schedBody.replaceChildren(h('ul', { class: 'ln-rows', 'aria-label': 'Scheduled messages' }, ...list.map(scheduledRow)));
    } catch (err) {
      schedBody.replaceChildren();
      fail(schedErr, err);
    }
  }
  function scheduledRow(s) {
    const actions = h('div', { class: 'ln-actions' });
    const text = s.text || (s.media.length ? '(picture only)' : '');
    const li = h('li', { class: 'ln-row', 'data-id': String(s.id) },
      h('div', { class: 'ln-main' },
        h('p', { class: 'ln-when', id: `sched-${s.id}` }, h('time', { datetime: s.sendAt }, formatWhen(s.sendAt)),
          ' to ', s.recipients.map((r, i) => [i ? ', ' : '', h('span', { class: 'ln-nowrap' }, formatPhone(r))])),
        h('p', { class: 'ln-text' }, text),
        h('p', { class: 'ln-meta' },
          s.media.length ? `${s.media.length} image${s.media.length === 1 ? '' : 's'} · ` : '',
          `${formatMoney(String(s.price), s.currency)} when sent`)),
      actions);
    if (canWrite) {
      const cancel = h('button', { type: 'button', class: 'ln-cancel', 'aria-describedby': `sched-${s.id}` }, 'Cancel message…');
      cancel.addEventListener('click', () => confirmRow(actions, 'Cancel this message?', 'Yes, cancel it', async (restore) => {
        try {
          await api('DELETE', linePath(line, `/scheduled/${s.id}`));
          announce('Scheduled message cancelled.');
          await loadScheduled();
          title.focus();
        } catch (err) {
          restore();
          if (err instanceof ApiError && err.status === 404) {
            fail(schedErr, new Error('That message is no longer scheduled: it was sent or cancelled meanwhile.'));
            loadScheduled();
          } else {
            fail(schedErr, err);
          }
        }
      }));
      actions.append(cancel);
    }
    return li;
  }

  // ---- blocked senders ----
  async function loadBlocked() {
    try {
      const list = await api('GET', linePath(line, '/blocked'));
      clear(blockErr);
      if (!list.length) {
        blockBody.replaceChildren(emptyState('No blocked senders', 'Nobody is blocked on this line.'));
        return;
      }
      blockBody.replaceChildren(h('ul', { class: 'ln-rows', 'aria-label': 'Blocked senders' }, ...list.map(blockedRow)));
    } catch (err) {
      blockBody.replaceChildren();
      fail(blockErr, err);
    }
  }
  function blockedRow(b) {
    const actions = h('div', { class: 'ln-actions' });
    const li = h('li', { class: 'ln-row', 'data-number': b.number },
      h('div', { class: 'ln-main' },
        h('p', { class: 'ln-number', id: `blocked-${b.number}` }, formatPhone(b.number)),
        b.reason ? h('p', { class: 'ln-text' }, b.reason) : null,
        h('p', { class: 'ln-meta' }, 'Blocked ', h('time', { datetime: b.blockedAt }, formatTime(b.blockedAt)))),
      actions);
    if (canWrite) {
      const unblock = h('button', { type: 'button', class: 'ln-unblock', 'aria-describedby': `blocked-${b.number}` }, 'Unblock…');
      unblock.addEventListener('click', () => confirmRow(actions, `Unblock ${formatPhone(b.number)}?`, 'Yes, unblock', async (restore) => {
        try {
          await api('DELETE', linePath(line, `/blocked/${encodeURIComponent(b.number)}`));
          announce(`${formatPhone(b.number)} unblocked.`);
          await loadBlocked();
          number.focus();
        } catch (err) {
          restore();
          if (err instanceof ApiError && err.status === 404) loadBlocked();
          else fail(blockErr, err);
        }
      }));
      actions.append(unblock);
    }
    return li;
  }
  blockForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(blockErr);
    if (number.value.trim() === '') {
      fail(blockErr, new Error('Enter the number to block.'));
      number.focus();
      return;
    }
    blockButton.disabled = true;
    blockButton.textContent = 'Blocking…';
    try {
      const body = { number: number.value.trim() };
      if (reason.value.trim() !== '') body.reason = reason.value.trim();
      const b = await api('POST', linePath(line, '/blocked'), { body });
      number.value = '';
      reason.value = '';
      announce(`${formatPhone(b.number)} blocked.`);
      await loadBlocked();
      number.focus();
    } catch (err) {
      fail(blockErr, err);
      number.focus();
    } finally {
      blockButton.disabled = false;
      blockButton.textContent = 'Block';
    }
  });

  await Promise.all([loadScheduled(), loadBlocked()]);

  // Another agent's changes are not events on the stream; a reset (or a
  // return to the tab) reloads both lists.
  const offs = [];
  if (ctx.stream && ctx.stream.on) offs.push(ctx.stream.on('reset', () => { loadScheduled(); loadBlocked(); }));
  const onVisible = () => { if (document.visibilityState === 'visible') { loadScheduled(); loadBlocked(); } };
  document.addEventListener('visibilitychange', onVisible);
  return () => {
    for (const off of offs) if (typeof off === 'function') off();
    document.removeEventListener('visibilitychange', onVisible);
  };
}
