// The demo chat: one websocket to ws/sessions/<id>/, events shown once each in seq order,
// bot messages after their after_ms, the user's own messages from the log (another tab's
// too), a reconnect that resumes from the last seq seen, and messages written while offline
// kept as "not sent" and sent on reconnect.
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
  let socket = null;
  let retry = 0;
  let pending = 0;  // messages waiting for their after_ms
  const shown = JSON.parse(sessionStorage.getItem(shownKey) || "[]");
  const outboxKey = `warlock-unsent:${chatId}`;
  const unsent = JSON.parse(sessionStorage.getItem(outboxKey) || "[]");  // [{id, text}]
  const mine = new Set(JSON.parse(sessionStorage.getItem(`warlock-mine:${chatId}`) || "[]"));

  // Dates the bot writes as 2026-09-21 are shown as people read them, in the browser's
  // language ("Monday, 21 September 2026", "segunda-feira, 21 de setembro de 2026").
  const isoDate = /\b(\d{4})-(\d{2})-(\d{2})\b/g;
  const readable = new Intl.DateTimeFormat(navigator.languages, {
    weekday: "long", day: "numeric", month: "long", year: "numeric", timeZone: "UTC",
  });

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

  function append(text, who, remember = true) {
    const item = document.createElement("li");
    item.className = who;
    if (who === "bot") fill(item, text); else item.textContent = text;
    list.appendChild(item);
    list.scrollTop = list.scrollHeight;
    if (remember) {
      shown.push([who, text]);
      sessionStorage.setItem(shownKey, JSON.stringify(shown.slice(-200)));
    }
    return item;
  }

  function saveOutbox() {
    sessionStorage.setItem(outboxKey, JSON.stringify(unsent));
    sessionStorage.setItem(`warlock-mine:${chatId}`, JSON.stringify([...mine].slice(-200)));
  }

  function showUnsent(message) {
    const item = append(message.text, "me unsent", false);
    item.dataset.id = message.id;
    item.title = "not sent yet: it goes when the connection is back";
  }

  function flush() {  // what was written offline, in order; a resend is ignored by its id
    while (unsent.length && socket && socket.readyState === WebSocket.OPEN) {
      const message = unsent[0];
      socket.send(JSON.stringify({ type: "message", text: message.text, id: message.id }));
      unsent.shift();
    }
    saveOutbox();
  }

  function setTyping(on) { typing.hidden = !on; }

  function handle(event) {
    if (event.type === "error") { append(`⚠ ${event.detail}`, "bot"); setTyping(false); return; }
    if (typeof event.seq !== "number" || event.seq <= lastSeq) return;  // already shown
    lastSeq = event.seq;
    sessionStorage.setItem(seqKey, String(lastSeq));
    if (event.type === "message" && event.role === "user") {
      inOrder(0, () => {
        const unsentCopy = list.querySelector(`li.unsent[data-id="${CSS.escape(event.id || "")}"]`);
        if (unsentCopy) { unsentCopy.remove(); append(event.text, "me"); }
        else if (!mine.has(event.id)) append(event.text, "me");  // another tab's, or before a reload
      });
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
    socket = new WebSocket(`${scheme}://${location.host}/ws/sessions/${chatId}/?after_seq=${lastSeq}`);
    socket.onopen = () => { retry = 0; status.textContent = "online"; status.className = "status online"; flush(); };
    socket.onmessage = (message) => handle(JSON.parse(message.data));
    socket.onclose = () => {
      status.textContent = "reconnecting…"; status.className = "status";
      setTimeout(connect, Math.min(5000, 250 * 2 ** retry++));
    };
  }

  form.addEventListener("submit", (submit) => {
    submit.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    const id = crypto.randomUUID();
    mine.add(id);
    input.value = "";
    if (!socket || socket.readyState !== WebSocket.OPEN) {  // offline: kept, sent on reconnect
      unsent.push({ id, text });
      saveOutbox();
      showUnsent({ id, text });
      return;
    }
    saveOutbox();
    append(text, "me");
    setTyping(true);
    socket.send(JSON.stringify({ type: "message", text, id }));
  });

  for (const [who, text] of shown.splice(0)) append(text, who);  // a reload keeps the transcript
  for (const message of unsent) showUnsent(message);
  window.warlockChat = { socket: () => socket, lastSeq: () => lastSeq };  // for the browser test
  connect();
})();
