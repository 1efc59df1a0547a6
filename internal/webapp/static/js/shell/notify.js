// Notifications: a browser notification for what the person asked to hear
// of (GET /me/notifications, kept by the server for every device of
// theirs): a new text in a conversation assigned to them, one in an
// unassigned conversation on their lines, a note that mentions them. Shown
// only while no tab of the app is in front; every tab decides alike and
// the notification's tag (the message or the note) makes the browser show
// it once. And the unread count in the tab's title, for a tab in the
// background.
import { h, dialog, errorText } from '../ui.js';
import { store } from '../store.js';
import { whoLabel, threadHref, myId, userName } from '../names.js';

const ALL_ON = { assignedToMe: true, unassignedOnMyLines: true, mentions: true };

const allowed = () => typeof Notification === 'function' && Notification.permission === 'granted';

function show(ctx, title, body, href, tag) {
  if (!allowed() || document.visibilityState === 'visible') return;
  const n = new Notification(title, { body, tag });
  n.onclick = () => { window.focus(); ctx.navigate(href); n.close(); };
}

async function onText(ctx, d) {
  const prefs = store.get('notifyPrefs') || ALL_ON;
  if (d.event !== 'message.received' || d.blocked || !allowed() || document.visibilityState === 'visible') return;
  if (!prefs.assignedToMe && !prefs.unassignedOnMyLines) return;
  const gp = d.groupParticipants?.length ? d.groupParticipants.join(',') : undefined;
  // The event says where the text is; the thread says whose it is.
  const page = await ctx.api('GET', `/sms/conversations/${encodeURIComponent(d.line)}/${encodeURIComponent(d.number)}`, { query: { limit: 1, groupParticipants: gp } });
  const owner = page.state?.assignedTo ?? null;
  if (!(owner === myId() ? prefs.assignedToMe : owner === null && prefs.unassignedOnMyLines)) return;
  const m = page.messages?.[0];
  show(ctx, `Text from ${whoLabel(d.number, d.groupParticipants, page.contact)}`, m?.text || 'An attachment',
    threadHref(d.line, d.number, d.groupParticipants), `message-${d.messageId}`);
}

function onNote(ctx, d) {
  const prefs = store.get('notifyPrefs') || ALL_ON;
  if (d.event !== 'conversation.mentioned' || !prefs.mentions) return;
  show(ctx, `${d.by === null ? 'An integration' : userName(d.by)} mentioned you`, d.comment || '',
    threadHref(d.line, d.number, d.groupParticipants), `mention-${d.line}-${d.number}-${d.comment}`);
}

// titleCount keeps "(n) " before every screen's title while n texts are
// unread.
function titleCount() {
  const el = document.querySelector('title');
  let n = 0;
  const apply = () => {
    const base = document.title.replace(/^\(\d+\) /, '');
    const want = n ? `(${n}) ${base}` : base;
    if (document.title !== want) document.title = want;
  };
  if (el) new MutationObserver(apply).observe(el, { childList: true, characterData: true, subtree: true });
  store.subscribe('unread', (u) => { n = u?.total || 0; apply(); });
}

// startNotifications listens on the stream for what to notify.
export function startNotifications(ctx) {
  titleCount();
  if (ctx.me?.kind !== 'user') return;
  ctx.api('GET', '/me/notifications').then((p) => store.set('notifyPrefs', p), () => {});
  ctx.stream.on('AccountSMS', (ev) => { onText(ctx, ev.data || {}).catch(() => {}); });
  ctx.stream.on('AccountConversations', (ev) => onNote(ctx, ev.data || {}));
}

// choosePreferences is the dialog of what to be notified of, saved for the
// person (PUT /me/notifications).
export async function choosePreferences(ctx) {
  const prefs = { ...(store.get('notifyPrefs') || ALL_ON) };
  const box = (key, label) => h('label', { class: 'check' },
    h('input', { type: 'checkbox', name: key, checked: !!prefs[key], on: { change: (e) => { prefs[key] = e.target.checked; } } }), label);
  const problem = h('p', { class: 'error', role: 'alert' });
  const ok = await dialog('Notify me of', h('div', { class: 'stack' },
    box('assignedToMe', 'A new text in a conversation assigned to me'),
    box('unassignedOnMyLines', 'A new text in an unassigned conversation on my lines'),
    box('mentions', 'A note that mentions me'),
    h('p', { class: 'hint', text: 'Shown while Switchboard is open in a tab that is not in front. Saved for every browser you sign in on.' })),
  [{ label: 'Cancel', value: false }, { label: 'Save', value: true, class: 'btn btn-primary', submit: true }]);
  if (!ok) return;
  try {
    store.set('notifyPrefs', await ctx.api('PUT', '/me/notifications', { body: prefs }));
  } catch (err) {
    problem.textContent = errorText(err);
    await dialog('Not saved', problem);
  }
}
