// What the composer says: prices, sizes, send times, and a failed send,
// schedule or upload explained for the person.
import { ApiError } from '../api.js';
import { formatMoney } from '../ui.js';

export function formatSize(n) {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

// toLocalInput formats a Date for a datetime-local input (local time).
export function toLocalInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

// whenFmt shows a send time in full: a scheduled message needs its day and
// its hour.
const whenFmt = new Intl.DateTimeFormat(undefined, { weekday: 'short', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' });
export function formatWhen(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : whenFmt.format(d);
}

export function price(n, currency) {
  // The API's prices are exact decimals in JSON numbers; String() gives back
  // the decimal the server wrote (no arithmetic is done on them here).
  return formatMoney(String(n), currency || 'USD');
}

export function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

// explain turns a failed send, schedule or upload into what it means for the
// person, and whether the same request may simply be tried again.
export function explain(err, what) {
  if (err && err.name === 'AbortError') return '';
  if (!(err instanceof ApiError) || err.status === 0) {
    return `Could not reach Switchboard, so it is not known whether the ${what} went through. ` +
      `Trying again is safe: the same message is never sent twice.`;
  }
  const detail = err.detail || err.message || '';
  switch (err.status) {
    case 400:
    case 413:
    case 422:
      return `The ${what} was refused: ${detail}. Nothing was sent.`;
    case 402:
      return `The account's balance is too low for this ${what}. Nothing was sent or charged.`;
    case 403:
      if (err.type === 'insufficient_scope') {
        return `This sign-in does not include permission to send (${(err.body && err.body.error && err.body.error.scope) || 'sms:send'}). Nothing was sent.`;
      }
      return `Your role does not allow sending from this line: ${detail}. Nothing was sent.`;
    case 404:
      return `This line or conversation is no longer available to you. Nothing was sent.`;
    case 409:
      return `${detail}. Nothing was sent by this attempt; try again in a moment.`;
    case 503:
      return `Switchboard or the carrier is unavailable right now: nothing was sent or charged. Try again shortly.`;
    default:
      return `The ${what} failed (${detail || err.status}). Nothing was charged; trying again is safe.`;
  }
}
