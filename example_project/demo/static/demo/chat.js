// The demo chat: one websocket to ws/sessions/<id>/, events shown once each in seq order,
// bot messages after their after_ms, and a reconnect that resumes from the last seq seen.
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

  function append(text, who) {
    const item = document.createElement("li");
    item.className = who;
    item.textContent = text;
    list.appendChild(item);
    list.scrollTop = list.scrollHeight;
    shown.push([who, text]);
    sessionStorage.setItem(shownKey, JSON.stringify(shown.slice(-200)));
  }

  function setTyping(on) { typing.hidden = !on; }

  function handle(event) {
    if (event.type === "error") { append(`⚠ ${event.detail}`, "bot"); setTyping(false); return; }
    if (typeof event.seq !== "number" || event.seq <= lastSeq) return;  // already shown
    lastSeq = event.seq;
    sessionStorage.setItem(seqKey, String(lastSeq));
    if (event.type === "message") {
      pending += 1;
      setTyping(true);
      setTimeout(() => {
        append(event.text, "bot");
        pending -= 1;
        if (pending === 0) setTyping(false);
      }, event.after_ms || 0);
    } else if (event.type === "turn" && pending === 0) {
      setTyping(false);
    }
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/ws/sessions/${chatId}/?after_seq=${lastSeq}`);
    socket.onopen = () => { retry = 0; status.textContent = "online"; status.className = "status online"; };
    socket.onmessage = (message) => handle(JSON.parse(message.data));
    socket.onclose = () => {
      status.textContent = "reconnecting…"; status.className = "status";
      setTimeout(connect, Math.min(5000, 250 * 2 ** retry++));
    };
  }

  form.addEventListener("submit", (submit) => {
    submit.preventDefault();
    const text = input.value.trim();
    if (!text || !socket || socket.readyState !== WebSocket.OPEN) return;
    append(text, "me");
    setTyping(true);
    socket.send(JSON.stringify({ type: "message", text, id: crypto.randomUUID() }));
    input.value = "";
  });

  for (const [who, text] of shown.splice(0)) append(text, who);  // a reload keeps the transcript
  window.warlockChat = { socket: () => socket, lastSeq: () => lastSeq };  // for the browser test
  connect();
})();
