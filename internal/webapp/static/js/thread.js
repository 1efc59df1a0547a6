// The thread view: a conversation's messages (oldest at the top), its
// internal notes between them, its state (resolved, owner) and the actions
// on it, with the composer (composer.js) under it. Kept live by the stream.
import { h, timeEl, formatPhone, emptyState, spinner, showError, errorText, announce, dialog, confirmDialog } from './ui.js';
import { composer } from './composer.js';

const PAGE = 50;

// convKey names a conversation: its line and its other party, or for a
// group thread every other party (sorted).
export function convKey(line, number, group) {
  const g = (group || []).slice().sort();
  return g.length ? `${line}|g:${g.join(',')}` : `${line}|${number}`;
}

export function peopleLabel(number, group) {
  if (group && group.length > 1) {
    return `${formatPhone(group[0])} + ${group.length - 1} other${group.length > 2 ? 's' : ''}`;
  }
  return formatPhone(number);
}

// myId is the signed-in person's user id (GET /me), or null.
export function myId(me) {
  return me?.userId ?? me?.user?.id ?? null;
}

export function userLabel(id, users, me) {
  if (id === undefined || id === null) return 'Nobody';
  if (myId(me) === id) return 'You';
  const u = (users || []).find((x) => x.id === id);
  // A role that sees only its own user (users:self) cannot name the others.
  if (!u) return `Teammate #${id}`;
  return [u.firstName, u.lastName].filter(Boolean).join(' ') || u.username || `User ${id}`;
}

function isImage(url) {
  return /\.(png|jpe?g|gif|webp|bmp|avif)(\?|$)/i.test(url);
}

function sameOrigin(url) {
  try { return new URL(url, location.href).origin === location.origin; } catch { return false; }
}

function deliveryText(m) {
  if (m.direction === 'in') return '';
  if (m.blocked) return `Not sent: blocked${m.blockReason ? ' (' + m.blockReason + ')' : ''}`;
  if (m.scheduled) return 'Scheduled';
  if (m.delivery) return m.delivery.error ? `${m.delivery.status}: ${m.delivery.error}` : m.delivery.status;
  return 'Sent';
}

function deliveryClass(m) {
  if (m.blocked || m.delivery?.error || /fail|undeliv|reject|error/i.test(m.delivery?.status || '')) return 'status-bad';
  if (/deliver/i.test(m.delivery?.status || '')) return 'status-ok';
  return '';
}

// openThread fills pane with the thread and returns {cleanup, key(k)}:
// key handles a thread shortcut and says whether it did.
export function openThread(pane, { line, number, group }, ctx, hooks) {
  const key = convKey(line, number, group);
  const gp = group && group.length ? group.join(',') : undefined;
  const base = `/sms/conversations/${encodeURIComponent(line)}/${encodeURIComponent(number)}`;
  const who = peopleLabel(number, group);
  let closed = false;
  let messages = [];   // newest first, as the API pages them
  let comments = [];
  let offset = 0;      // how many messages are loaded
  let done = false;
  let convState = hooks.item ? { resolved: hooks.item.resolved, assignedTo: hooks.item.assignedTo } : null;
  let holdUnread = false;

  document.title = `${who} · Inbox · Switchboard`;
  const title = h('h2', { id: 'thread-title', tabindex: '-1', text: who });
  const lineLabel = ctx.lineName?.(line);
  const stateLine = h('p', { class: 'thread-state', role: 'status' });
  const resolveBtn = h('button', { type: 'button', class: 'btn', 'aria-keyshortcuts': 'e' });
  const assignSel = h('select', { id: 'assign-select', name: 'assignee', 'aria-keyshortcuts': 'a' });
  const unreadBtn = h('button', { type: 'button', class: 'btn', 'aria-keyshortcuts': 'u', on: { click: markUnread } }, 'Mark unread');
  const deleteBtn = h('button', { type: 'button', class: 'btn btn-danger-quiet', on: { click: deleteConversation } }, 'Delete…');
  const actions = h('div', { class: 'thread-actions' },
    ctx.can.write ? resolveBtn : null,
    ctx.can.write ? h('span', { class: 'assign' }, h('label', { for: 'assign-select', text: 'Assigned to' }), assignSel) : null,
    unreadBtn,
    ctx.can.delete ? deleteBtn : null);
  const timeline = h('ol', { class: 'timeline', 'aria-label': 'Messages and notes' });
  const earlier = h('button', { type: 'button', class: 'btn btn-quiet earlier', hidden: true, on: { click: loadEarlier } }, 'Load earlier messages');
  const scroller = h('div', { class: 'timeline-scroll', tabindex: '0', 'aria-label': 'Conversation history' }, earlier, timeline);
  const noteText = h('textarea', { id: 'note-text', name: 'comment', rows: 2, maxlength: 2000, required: true });
  const noteForm = h('form', { class: 'note-form', on: { submit: addNote } },
    h('label', { for: 'note-text', text: 'Internal note (only your team sees it)' }), noteText,
    h('div', { class: 'note-actions' }, h('button', { type: 'submit', class: 'btn' }, 'Add note')));
  const noteBox = h('details', { class: 'note-box' }, h('summary', { 'aria-keyshortcuts': 'n' }, 'Add internal note'), noteForm);
  const reply = composer(ctx, {
    line, number, groupParticipants: group && group.length ? group : undefined,
    onSent: () => { refreshMessages(); },
  });
  const section = h('article', { class: 'thread', 'aria-labelledby': 'thread-title' },
    h('header', { class: 'thread-head' },
      h('a', { class: 'back', href: hooks.backHref }, h('span', { 'aria-hidden': 'true' }, '← '), 'Conversations'),
      h('div', { class: 'thread-title' }, title,
        h('p', { class: 'thread-sub' },
          group && group.length > 1 ? `Group with ${group.map(formatPhone).join(', ')} · ` : '',
          `on ${lineLabel ? lineLabel + ' · ' : ''}${formatPhone(line)}`),
        stateLine),
      actions),
    scroller,
    ctx.can.write ? noteBox : null,
    reply);
  pane.replaceChildren(section, spinner('Loading messages…'));

  // ---- state (resolved, owner) ----
  let users = [];
  function paintState() {
    if (!convState) {
      stateLine.textContent = '';
      resolveBtn.textContent = 'Resolve';
      resolveBtn.onclick = () => resolve();
    } else {
      const owner = convState.assignedTo ? `Assigned to ${hooks.userName(convState.assignedTo)}` : 'Unassigned';
      stateLine.replaceChildren(
        h('span', { class: convState.resolved ? 'pill pill-resolved' : 'pill pill-open', text: convState.resolved ? 'Resolved' : 'Open' }),
        ' ', owner);
      resolveBtn.textContent = convState.resolved ? 'Reopen' : 'Resolve';
      resolveBtn.onclick = () => (convState.resolved ? reopen() : resolve());
    }
    const current = convState?.assignedTo ?? null;
    const opts = [h('option', { value: '', text: 'Nobody' })];
    // Whom the person may give it to: the users GET /users shows them (a
    // users:self role sees only itself), and always themselves.
    const me = myId(ctx.me);
    for (const u of users) opts.push(h('option', { value: String(u.id), text: hooks.userName(u.id) }));
    if (me !== null && !users.some((u) => u.id === me)) opts.push(h('option', { value: String(me), text: 'You' }));
    if (current !== null && current !== me && !users.some((u) => u.id === current)) {
      opts.push(h('option', { value: String(current), text: hooks.userName(current), disabled: true }));
    }
    assignSel.replaceChildren(...opts);
    assignSel.value = current === null ? '' : String(current);
  }
  ctx.users().then((u) => { users = u; paintState(); }).catch(() => {});
  paintState();

  function setState(st, quiet) {
    convState = { resolved: !!st.resolved, assignedTo: st.assignedTo ?? undefined };
    paintState();
    if (!quiet) hooks.onState(convState);
  }

  async function act(what, fn) {
    pane.querySelectorAll(':scope > .error, .thread-head .error').forEach((e) => e.remove());
    try {
      return await fn();
    } catch (err) {
      const box = showError(null, err);
      box.querySelector('p').textContent = `Could not ${what}: ${errorText(err)}`;
      section.querySelector('.thread-head').append(box);
      return null;
    }
  }

  async function resolve() {
    const note = h('textarea', { id: 'resolve-note', rows: 3, maxlength: 2000 });
    const ok = await dialog('Resolve this conversation', [
      h('label', { for: 'resolve-note', text: 'Note for your team (optional)' }), note,
    ], [{ label: 'Cancel', value: false }, { label: 'Resolve', value: true, class: 'btn btn-primary', submit: true }]);
    if (!ok) return;
    const body = note.value.trim() ? { comment: note.value.trim() } : {};
    const st = await act('resolve', () => ctx.api('POST', base + '/resolve', { query: { groupParticipants: gp }, body }));
    if (st) {
      setState(st);
      announce('Conversation resolved.');
      if (body.comment) loadComments();
    }
  }
  async function reopen() {
    const st = await act('reopen', () => ctx.api('POST', base + '/reopen', { query: { groupParticipants: gp }, body: {} }));
    if (st) { setState(st); announce('Conversation reopened.'); }
  }
  assignSel.addEventListener('change', async () => {
    const userId = assignSel.value === '' ? null : Number(assignSel.value);
    const st = await act('assign', () => ctx.api('POST', base + '/assign', { query: { groupParticipants: gp }, body: { userId } }));
    if (st) { setState(st); announce(userId === null ? 'Unassigned.' : `Assigned to ${hooks.userName(userId)}.`); }
    else paintState();
  });
  async function addNote(e) {
    e.preventDefault();
    const comment = noteText.value.trim();
    if (!comment) return;
    const st = await act('add the note', () => ctx.api('POST', base + '/comments', { query: { groupParticipants: gp }, body: { comment } }));
    if (st) {
      noteText.value = '';
      noteBox.open = false;
      setState(st, true);
      await loadComments();
      announce('Note added.');
    }
  }
  // Mark unread: the newest received text becomes unread again, and the
  // person goes back to the list, so reading it here does not mark it read
  // at once (docs/decisions.md, "When the app marks a thread read").
  async function markUnread() {
    const lastIn = messages.find((m) => m.direction === 'in');
    if (!lastIn) { announce('There is no received text to mark unread.'); return; }
    holdUnread = true;
    const ok = await act('mark it unread', () => ctx.api('POST', base + '/read', { query: { groupParticipants: gp }, body: { messageIds: [lastIn.id], read: false } }).then(() => true));
    if (!ok) { holdUnread = false; return; }
    {
      announce('Marked unread.');
      hooks.onRead();
      ctx.navigate(hooks.backHref);
    }
  }
  async function deleteConversation() {
    if (!(await confirmDialog('Delete this conversation?', `Every message with ${who} and its attachments, notes, resolution and owner are deleted for good. This cannot be undone.`, 'Delete conversation'))) return;
    const r = await act('delete the conversation', () => ctx.api('DELETE', base, { query: { groupParticipants: gp } }).then(() => true));
    if (r) { announce('Conversation deleted.'); hooks.onGone(); }
  }
  async function deleteMessage(m) {
    if (!(await confirmDialog('Delete this message?', 'The message and its attachments are deleted for good. This cannot be undone.', 'Delete message'))) return;
    const r = await act('delete the message', () => ctx.api('DELETE', `${base}/messages/${m.id}`, { query: { groupParticipants: gp } }).then(() => true));
    if (r) {
      messages = messages.filter((x) => x.id !== m.id);
      offset = Math.max(0, offset - 1);
      paint();
      announce('Message deleted.');
    }
  }

  // ---- messages and notes ----
  function messageItem(m) {
    const media = (m.media || []).map((u, i) => {
      const name = decodeURIComponent(u.split('?')[0].split('/').pop() || `attachment ${i + 1}`);
      if (isImage(u) && sameOrigin(u)) {
        return h('a', { href: u, class: 'media-img', target: '_blank', rel: 'noopener' }, h('img', { src: u, alt: `Image attachment ${i + 1}`, loading: 'lazy' }));
      }
      return h('a', { href: u, class: 'media-link', target: '_blank', rel: 'noopener noreferrer' }, `Attachment: ${name}`);
    });
    const status = deliveryText(m);
    const sender = m.direction === 'in' ? formatPhone(m.from) : (m.sentBy ? hooks.userName(m.sentBy) : 'Sent by the API');
    return h('li', { class: ['msg', m.direction === 'in' ? 'msg-in' : 'msg-out', m.direction === 'in' && !m.read && 'msg-unread'], 'data-id': String(m.id) },
      h('div', { class: 'bubble' },
        m.text ? h('p', { class: 'msg-text', text: m.text }) : null,
        media.length ? h('div', { class: 'media' }, media) : null),
      h('div', { class: 'msg-meta' },
        h('span', { class: 'msg-who', text: sender }), ' · ', timeEl(m.sentAt),
        m.scheduled && m.scheduledAt ? [' · ', h('span', { text: 'for ' }), timeEl(m.scheduledAt)] : null,
        status ? [' · ', h('span', { class: ['msg-status', deliveryClass(m)], text: status })] : null,
        m.direction === 'in' && !m.read ? [' · ', h('span', { class: 'msg-status', text: 'Unread' })] : null,
        ctx.can.delete ? h('button', { type: 'button', class: 'link-btn msg-delete', 'aria-label': `Delete message sent ${new Date(m.sentAt).toLocaleString()}`, on: { click: () => deleteMessage(m) } }, 'Delete') : null));
  }
  function noteItem(c) {
    return h('li', { class: 'note' },
      h('p', { class: 'note-label' }, h('span', { class: 'note-tag', text: 'Internal note' }), ` ${c.authorId ? hooks.userName(c.authorId) : 'API'} · `, timeEl(c.createdAt)),
      h('p', { class: 'note-text', text: c.comment }));
  }

  function paint() {
    const atBottom = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
    const oldest = messages.length ? messages[messages.length - 1].sentAt : null;
    const entries = messages.map((m) => ({ t: m.sentAt, el: () => messageItem(m) }))
      .concat(comments.filter((c) => done || !oldest || c.createdAt >= oldest).map((c) => ({ t: c.createdAt, el: () => noteItem(c) })));
    entries.sort((a, b) => (a.t < b.t ? -1 : a.t > b.t ? 1 : 0));
    timeline.replaceChildren(...entries.map((e) => e.el()));
    earlier.hidden = done;
    if (!messages.length) timeline.append(h('li', null, emptyState('No messages', 'This conversation has no messages left.')));
    return atBottom;
  }
  function toBottom() { scroller.scrollTop = scroller.scrollHeight; }

  const visible = () => document.visibilityState === 'visible';
  async function fetchPage(off, limit, markRead) {
    return ctx.api('GET', base, { query: { groupParticipants: gp, limit, offset: off, markRead: markRead ? 'true' : undefined } });
  }

  async function first() {
    try {
      const [page] = await Promise.all([fetchPage(0, PAGE, visible()), loadComments(false)]);
      if (closed) return;
      messages = page.messages;
      if (page.state) setState(page.state, true);
      offset = messages.length;
      done = messages.length < PAGE;
      pane.querySelector(':scope > .spinner')?.remove();
      paint();
      toBottom();
      if (page.markedRead) hooks.onRead();
    } catch (err) {
      if (closed) return;
      pane.querySelector(':scope > .spinner')?.remove();
      if (err.status === 404) {
        pane.replaceChildren(h('div', { class: 'thread' }, h('header', { class: 'thread-head' }, h('a', { class: 'back', href: hooks.backHref }, '← Conversations')),
          emptyState('No such conversation', 'It was deleted, or it is not on a line you can use.')));
      } else showError(pane, err);
    }
  }
  async function loadComments(repaint = true) {
    try {
      comments = await ctx.api('GET', base + '/comments', { query: { groupParticipants: gp } });
    } catch { comments = []; }
    if (repaint && !closed) paint();
  }
  async function loadEarlier() {
    earlier.disabled = true;
    earlier.textContent = 'Loading…';
    try {
      const page = await fetchPage(offset, PAGE, false);
      const have = new Set(messages.map((m) => m.id));
      const before = scroller.scrollHeight - scroller.scrollTop;
      messages = messages.concat(page.messages.filter((m) => !have.has(m.id)));
      offset += page.messages.length;
      done = page.messages.length < PAGE;
      paint();
      scroller.scrollTop = scroller.scrollHeight - before; // keep the place
    } catch (err) {
      showError(scroller, err);
    }
    earlier.disabled = false;
    earlier.textContent = 'Load earlier messages';
  }
  // refreshMessages reads the newest page again and merges it: new
  // messages, new delivery receipts. It marks read only when the person can
  // see the thread.
  let refreshing = null, again = false;
  async function refreshMessages() {
    if (refreshing) { again = true; return refreshing; }
    refreshing = (async () => {
      do {
        again = false;
        try {
          const markRead = visible() && !holdUnread;
          const page = await fetchPage(0, PAGE, markRead);
          if (closed) return;
          const byId = new Map(page.messages.map((m) => [m.id, m]));
          const fresh = page.messages.filter((m) => !messages.some((x) => x.id === m.id));
          messages = page.messages.concat(messages.filter((m) => !byId.has(m.id) && m.id < (page.messages.at(-1)?.id ?? Infinity)));
          offset += fresh.length;
          const atBottom = paint();
          if (atBottom || fresh.some((m) => m.direction === 'out')) toBottom();
          for (const m of fresh.filter((x) => x.direction === 'in').reverse()) {
            announce(`New text from ${formatPhone(m.from)}: ${m.text || 'an attachment'}`);
          }
          if (page.markedRead) hooks.onRead();
        } catch { /* the next event tries again */ }
      } while (again && !closed);
    })();
    try { await refreshing; } finally { refreshing = null; }
  }

  // ---- live ----
  function mine(d) { return d.line === line && convKey(d.line, d.number, d.groupParticipants) === key; }
  const offs = [
    ctx.stream.on('AccountSMS', (ev) => { if (mine(ev.data || {})) refreshMessages(); }),
    ctx.stream.on('AccountConversations', (ev) => {
      const d = ev.data || {};
      if (!mine(d)) return;
      const by = d.by && d.by !== myId(ctx.me) ? hooks.userName(d.by) : null;
      switch (d.event) {
        case 'conversation.resolved':
        case 'conversation.reopened':
        case 'conversation.assigned':
          setState(d.state, true);
          if (by) {
            announce(d.event === 'conversation.assigned'
              ? `${by} assigned this conversation to ${hooks.userName(d.state.assignedTo)}.`
              : `${by} ${d.event === 'conversation.resolved' ? 'resolved' : 'reopened'} this conversation.`);
          }
          if (d.comment) loadComments();
          break;
        case 'conversation.commented':
          setState(d.state, true);
          loadComments();
          if (by) announce(`${by} added a note.`);
          break;
        case 'message.deleted':
          messages = messages.filter((m) => m.id !== d.messageId);
          paint();
          break;
        case 'conversation.deleted':
          pane.replaceChildren(h('div', { class: 'thread' }, h('header', { class: 'thread-head' }, h('a', { class: 'back', href: hooks.backHref }, '← Conversations')),
            emptyState('This conversation was deleted', by ? `${by} deleted it.` : 'It was deleted.')));
          closed = true;
          break;
        case 'conversation.read':
        case 'conversation.unread':
          break;
      }
    }),
  ];
  // A thread opened in a hidden tab is marked read when the person looks.
  function onVisible() {
    if (visible() && !holdUnread && messages.some((m) => m.direction === 'in' && !m.read)) refreshMessages();
  }
  document.addEventListener('visibilitychange', onVisible);

  first();
  return {
    // known gives the state from the list when it loads before the
    // thread's own read (which carries the state too).
    known(item) {
      if (!convState && item && !closed) setState({ resolved: item.resolved, assignedTo: item.assignedTo }, true);
    },
    cleanup() {
      closed = true;
      offs.forEach((f) => f());
      document.removeEventListener('visibilitychange', onVisible);
    },
    key(k) {
      switch (k) {
        case 'r': { const t = reply.querySelector('textarea'); if (!t) return false; t.focus(); return true; }
        case 'n': if (!ctx.can.write) return false; noteBox.open = true; noteText.focus(); return true;
        case 'e': if (!ctx.can.write) return false; resolveBtn.click(); return true;
        case 'a': if (!ctx.can.write) return false; assignSel.focus(); return true;
        case 'u': markUnread(); return true;
        default: return false;
      }
    },
  };
}
