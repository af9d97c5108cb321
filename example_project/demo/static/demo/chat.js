// The demo chat: one websocket to ws/sessions/<id>/, events shown once each in seq order,
// bot messages after their after_ms, the user's own messages from the log (another tab's
// too), and a reconnect that resumes from the last seq seen. Every message the user writes is
// kept until its own echo (same id) is in the log: it is sent again after a reconnect, a
// server restart (close 1012) or an "unavailable" error (the server's dedupe makes that
// safe), and shows "not sent" while the connection is down or the server refused it. When
// people take the chat over, their messages show with their name, and a notice says who joined
// and when the assistant is back.
(() => {
  const root = document.querySelector(".chat");
  const chatId = root.dataset.chatId;
  const list = document.getElementById("messages");
  const typing = document.getElementById("typing");
  const status = document.getElementById("status");
  const form = document.getElementById("composer");
  const input = document.getElementById("text");
  const seqKey = `warlock-last-seq:${chatId}`;
  const shownKey = `warlock-shown:${chatId}`;
  let lastSeq = Number(sessionStorage.getItem(seqKey) || 0);
  const versionKey = `warlock-version:${chatId}`;
  let lastVersion = Number(sessionStorage.getItem(versionKey) || 0);
  let socket = null;
  let retry = 0;
  let pending = 0;  // messages waiting for their after_ms
  const shown = JSON.parse(sessionStorage.getItem(shownKey) || "[]");
  const outboxKey = `warlock-unsent:${chatId}`;
  // Written, not yet echoed by the log: [{id, text}], oldest first.
  const unsent = JSON.parse(sessionStorage.getItem(outboxKey) || "[]");
  let resendTimer = null;
  // Errors after which the same message, sent again, may go through.
  const RETRYABLE = ["unavailable", "throttled", "session-conflict", "server-error"];
  // The page's own words, in the conversation's language (each turn frame says which).
  const WORDS = {
    en: {
      title: "Booking assistant", online: "online", reconnecting: "reconnecting…",
      typing: "the assistant is typing…", placeholder: "Say hi, or “I'd like to book”",
      send: "Send", message: "Message", unsent: "not sent yet: it goes when the connection is back",
      waiting: () => "A person will answer you here.",
      taken: (by) => `${by} joined the chat.`,
      released: (by) => `${by} handed you back to the assistant.`,
      conversation: "Conversation", assistant: "free-form assistant",
      helper: "OpenAI Agents SDK helper", demo: "warlock_sessions demo",
    },
    pt: {
      title: "Assistente de agendamento", online: "online", reconnecting: "reconectando…",
      typing: "o assistente está digitando…", placeholder: "Diga oi, ou “quero marcar”",
      send: "Enviar", message: "Mensagem", unsent: "ainda não enviada: vai quando a conexão voltar",
      waiting: () => "Uma pessoa vai responder aqui.",
      taken: (by) => `${by} entrou na conversa.`,
      released: (by) => `${by} devolveu você ao assistente.`,
      conversation: "Conversa", assistant: "assistente livre",
      helper: "assistente do OpenAI Agents SDK", demo: "demonstração do warlock_sessions",
    },
  };
  // A page of another agent names its socket route, title and prompt (the helper's page).
  for (const language of Object.values(WORDS)) {
    language.title = root.dataset.title || language.title;
    language.placeholder = root.dataset.placeholder || language.placeholder;
  }
  const route = root.dataset.socket || "sessions";
  const languageKey = `warlock-language:${chatId}`;
  let words = WORDS[sessionStorage.getItem(languageKey)] || WORDS.en;

  function speak(language) {  // the page's chrome in the conversation's language
    if (!WORDS[language]) return;
    words = WORDS[language];
    sessionStorage.setItem(languageKey, language);
    document.documentElement.lang = language;
    document.querySelector(".chat h1").textContent = words.title;
    document.title = `${words.title} — ${words.demo}`;
    document.getElementById("conversation-word").textContent = words.conversation;
    document.getElementById("assistant-link").textContent = words.assistant;
    document.getElementById("helper-link").textContent = words.helper;
    readable = dateFormat(language);
    for (const time of list.querySelectorAll("time")) {  // the dates already shown, too
      time.textContent = readable.format(new Date(`${time.dateTime}T00:00:00Z`));
    }
    typing.textContent = words.typing;
    input.placeholder = words.placeholder;
    input.setAttribute("aria-label", words.message);
    form.querySelector("button").textContent = words.send;
    if (status.classList.contains("online")) status.textContent = words.online;
  }
  const HANDOVER_NOTICES = {
    waiting: (by) => words.waiting(by),
    taken: (by) => words.taken(by),
    released: (by) => words.released(by),
  };
  const mine = new Set(JSON.parse(sessionStorage.getItem(`warlock-mine:${chatId}`) || "[]"));

  // Dates the bot writes as 2026-09-21 are shown as people read them, in the conversation's
  // language ("Monday, September 21, 2026", "segunda-feira, 21 de setembro de 2026"): a
  // Portuguese sentence never carries an English date, whatever the browser's locale.
  const isoDate = /\b(\d{4})-(\d{2})-(\d{2})\b/g;
  const dateFormat = (language) => new Intl.DateTimeFormat(language, {
    weekday: "long", day: "numeric", month: "long", year: "numeric", timeZone: "UTC",
  });
  let readable = dateFormat("en");

  function fill(item, text) {
    let from = 0;
    for (const match of text.matchAll(isoDate)) {
      const date = new Date(Date.UTC(+match[1], +match[2] - 1, +match[3]));
      if (Number.isNaN(date.getTime()) || date.getUTCDate() !== +match[3]) continue;
      item.append(text.slice(from, match.index));
      const time = document.createElement("time");
      time.dateTime = match[0];
      time.textContent = readable.format(date);
      item.append(time);
      from = match.index + match[0].length;
    }
    item.append(text.slice(from));
  }

  function append(text, who, remember = true, by = "") {
    const item = document.createElement("li");
    item.className = who;
    if (by) {  // a person answering for the assistant: the user sees who
      const name = document.createElement("strong");
      name.className = "by";
      name.textContent = by;
      item.append(name);
    }
    if (who === "bot" || who === "staff") fill(item, text); else item.textContent = text;
    list.appendChild(item);
    list.scrollTop = list.scrollHeight;
    if (remember) {
      shown.push([who, text, by]);
      sessionStorage.setItem(shownKey, JSON.stringify(shown.slice(-200)));
    }
    return item;
  }

  function saveOutbox() {
    sessionStorage.setItem(outboxKey, JSON.stringify(unsent));
    sessionStorage.setItem(`warlock-mine:${chatId}`, JSON.stringify([...mine].slice(-200)));
  }

  function showUnsent(message, sending) {
    const item = append(message.text, sending ? "me sending" : "me unsent", false);
    item.dataset.id = message.id;
    item.title = words.unsent;
  }

  function markUnsent() {  // the connection dropped or the server could not take them
    for (const item of list.querySelectorAll("li.sending")) {
      item.classList.replace("sending", "unsent");
    }
  }

  function flush() {  // every message not yet echoed, in order; a resend is ignored by its id
    clearTimeout(resendTimer);
    if (!socket || socket.readyState !== WebSocket.OPEN) return;
    for (const message of unsent) {
      socket.send(JSON.stringify({ type: "message", text: message.text, id: message.id }));
    }
    for (const item of list.querySelectorAll("li.unsent")) {
      item.classList.replace("unsent", "sending");
    }
  }

  function echoed(id) {
    const index = unsent.findIndex((message) => message.id === id);
    if (index >= 0) { unsent.splice(index, 1); saveOutbox(); }
  }

  function setTyping(on) { typing.hidden = !on; }

  function handle(event) {
    if (event.type === "error" && RETRYABLE.includes(event.code)) {
      // Nothing was changed: keep the messages and send them again shortly.
      markUnsent();
      setTyping(false);
      clearTimeout(resendTimer);
      resendTimer = setTimeout(flush, 1000 * (event.retry_after || 2));
      return;
    }
    if (event.type === "error") {  // refused for good: sending it again would not help
      // Frames are answered in order: the refused one is the oldest not yet echoed.
      const refused = unsent.shift();
      saveOutbox();
      const item = refused && list.querySelector(`li[data-id="${CSS.escape(refused.id)}"]`);
      if (item) item.classList.replace("sending", "unsent");
      append(`⚠ ${event.detail}`, "bot");
      setTyping(false);
      return;
    }
    if (event.type === "turn" && event.version < lastVersion) {
      // The session was deleted (a retention prune) and this turn made it again: its log
      // starts over. Read it from the start.
      lastSeq = 0;
      lastVersion = 0;
      sessionStorage.setItem(seqKey, "0");
      sessionStorage.setItem(versionKey, "0");
      socket.close();
      return;
    }
    if (typeof event.seq !== "number" || event.seq <= lastSeq) return;  // already shown
    if (event.type === "turn") {
      if (event.language) speak(event.language);
      lastVersion = event.version;
      sessionStorage.setItem(versionKey, String(lastVersion));
    }
    lastSeq = event.seq;
    sessionStorage.setItem(seqKey, String(lastSeq));
    if (event.type === "message" && event.role === "user") {
      echoed(event.id);
      inOrder(0, () => {
        const copy = list.querySelector(`li[data-id="${CSS.escape(event.id || "")}"]`);
        if (copy) { copy.remove(); append(event.text, "me"); }
        else if (!mine.has(event.id)) append(event.text, "me");  // another tab's, or before a reload
      });
    } else if (event.type === "message" && event.role === "staff") {
      inOrder(0, () => append(event.text, "staff", true, event.by));
    } else if (event.type === "handover" && HANDOVER_NOTICES[event.status]) {
      const notice = HANDOVER_NOTICES[event.status](event.by || "Someone");
      inOrder(0, () => append(notice, "notice"));
    } else if (event.type === "message") {
      pending += 1;
      setTyping(true);
      inOrder(event.after_ms || 0, () => {
        append(event.text, "bot");
        pending -= 1;
        if (pending === 0) setTyping(false);
      });
    } else if (event.type === "turn" && pending === 0) {
      setTyping(false);
    }
  }

  // Messages show in log order, each bot message after its after_ms: one queue for both sides.
  let showing = Promise.resolve();
  function inOrder(delayMs, show) {
    showing = showing.then(() => new Promise((done) => setTimeout(done, delayMs))).then(show);
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/ws/${route}/${chatId}/?after_seq=${lastSeq}`);
    socket.onopen = () => { retry = 0; status.className = "status online"; status.textContent = words.online; flush(); };
    socket.onmessage = (message) => handle(JSON.parse(message.data));
    socket.onclose = () => {
      markUnsent();
      status.textContent = words.reconnecting; status.className = "status";
      setTimeout(connect, Math.min(5000, 250 * 2 ** retry++));
    };
  }

  form.addEventListener("submit", (submit) => {
    submit.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    // randomUUID exists only on https and localhost; a page on plain http elsewhere (a LAN
    // address, a test host) makes its id from getRandomValues, which every page has.
    const id = crypto.randomUUID
      ? crypto.randomUUID()
      : Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
    mine.add(id);
    input.value = "";
    unsent.push({ id, text });  // kept until the log echoes it
    saveOutbox();
    const online = socket && socket.readyState === WebSocket.OPEN;
    showUnsent({ id, text }, online);
    if (!online) return;  // offline: sent on reconnect
    setTyping(true);
    socket.send(JSON.stringify({ type: "message", text, id }));
  });

  speak(sessionStorage.getItem(languageKey) || "en");
  for (const [who, text, by] of shown.splice(0)) append(text, who, true, by);  // a reload keeps the transcript
  for (const message of unsent) showUnsent(message, false);
  window.warlockChat = { socket: () => socket, lastSeq: () => lastSeq };  // for the browser test
  connect();
})();
