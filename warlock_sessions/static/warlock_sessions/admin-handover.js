// A session's admin page, live: it follows the session's socket (ws/sessions/<id>/) from the
// last event the page was drawn with, so the customer's messages and every handover appear as
// they happen, newest at the bottom of the transcript right above the reply box, with the
// message count and the session's version kept current; take, reply and hand back are posted
// to the admin with their form's key, so a form sent twice answers once. Without websockets
// the page reloads after each action.
(() => {
  const panel = document.getElementById("handover");
  if (!panel) return;
  const transcript = document.getElementById("transcript");
  const status = document.getElementById("handover-status");
  const release = document.getElementById("handover-release");
  const take = document.getElementById("handover-take");
  const live = document.getElementById("handover-live");
  const count = document.getElementById("transcript-count");
  const version = document.querySelector(".field-version .readonly");
  const me = panel.dataset.me;
  let lastSeq = Number(panel.dataset.lastSeq || 0);
  let socket = null;
  let retry = 0;

  // Dates the bot wrote as 2026-12-08, as the customer's chat showed them: in the
  // conversation's language (the page's server-drawn lines are written the same way).
  const isoDate = /\b(\d{4})-(\d{2})-(\d{2})\b/g;
  const readable = new Intl.DateTimeFormat(panel.dataset.language === "pt" ? "pt" : "en-US", {
    weekday: "long", day: "numeric", month: "long", year: "numeric", timeZone: "UTC",
  });
  const asRead = (text) => text.replace(isoDate, (whole, y, m, d) => {
    const day = new Date(Date.UTC(+y, +m - 1, +d));
    return day.getUTCDate() === +d ? readable.format(day) : whole;
  });

  function showNewest() { transcript.scrollTop = transcript.scrollHeight; }

  function line(cls, text, label) {
    document.getElementById("no-messages")?.remove();
    const item = document.createElement("li");
    item.className = cls;
    item.textContent = cls === "bot" || cls === "staff" ? asRead(text) : text;
    const time = document.createElement("time");
    time.textContent = `${label} · ${new Date().toLocaleString()}`;
    item.append(time);
    transcript.append(item);
    if (count) count.textContent = transcript.querySelectorAll("li:not(.notice)").length;
    showNewest();
  }

  function showStatus(event) {
    const words = {
      waiting: "Waiting for a person.",
      taken: `${event.by || "Someone"} answers this chat.`,
      released: "The bot answers this chat.",
    };
    status.textContent = words[event.status] || "";
    status.className = `handover-status ${event.status === "released" ? "bot" : event.status}`;
    if (release) release.hidden = event.status === "released";
    if (take) {
      take.textContent = event.status === "released" ? "Take over from the bot" : "Take this chat";
      take.hidden = event.status === "taken" && event.by === me;  // one's own chat already
    }
    line("notice", words[event.status] || event.status, "handover");
  }

  function handle(event) {
    if (typeof event.seq !== "number" || event.seq <= lastSeq) return;
    lastSeq = event.seq;
    if (event.type === "message") {
      const who = event.role === "user" ? "user" : event.role === "staff" ? "staff" : "bot";
      line(who, event.text, event.by || who);
    } else if (event.type === "handover") {
      showStatus(event);
    } else if (event.type === "turn" && version && typeof event.version === "number") {
      version.textContent = event.version;
    }
  }

  function connect() {
    if (!window.WebSocket) return;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const id = encodeURIComponent(panel.dataset.sessionId);
    socket = new WebSocket(`${scheme}://${location.host}/ws/sessions/${id}/?after_seq=${lastSeq}`);
    socket.onopen = () => { retry = 0; panel.dataset.live = "1"; };
    socket.onmessage = (message) => handle(JSON.parse(message.data));
    socket.onclose = () => {
      panel.dataset.live = "";
      if (live) live.textContent = "Live updates are paused: reconnecting… (reload to see new messages)";
      setTimeout(connect, Math.min(10000, 500 * 2 ** retry++));
    };
  }

  async function post(form, submitter) {
    const body = new FormData(form);
    if (submitter && submitter.name) body.set(submitter.name, submitter.value);

    const response = await fetch(panel.dataset.url, {
      method: "POST", body, headers: { Accept: "application/json" }, credentials: "same-origin",
    }).catch(() => null);
    const answer = response ? await response.json().catch(() => ({})) : {};
    if (!response || !response.ok) {
      if (live) live.textContent = `Not done: ${answer.detail || "the server did not answer; try again."}`;
      return false;
    }
    // Done: the form's next post is a new action (a retry or a double click before this was
    // answered reused the key, so it was answered once).
    form.elements.key.value = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
    if (panel.dataset.live !== "1") location.reload();  // no socket to show it: draw the page anew
    return true;
  }

  for (const form of panel.querySelectorAll("form")) {
    form.addEventListener("submit", async (submit) => {
      submit.preventDefault();
      const text = form.querySelector("textarea");
      if (await post(form, submit.submitter) && text) text.value = "";
    });
  }
  window.warlockHandover = { lastSeq: () => lastSeq, live: () => panel.dataset.live === "1" };
  showNewest();
  // On a phone the page opens with the newest messages and the reply box in view.
  document.getElementById("handover-reply")?.scrollIntoView({ block: "nearest" });
  connect();
})();
