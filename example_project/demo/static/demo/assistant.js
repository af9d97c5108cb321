// The demo assistant: history from the API, turns over ws/conversations/<id>/ with the reply
// streamed word by word and tool calls shown, "undo last turn" (truncate) and "try another
// answer" (fork before the last turn, with its question ready to rephrase). A message is kept
// until its turn is in the history: after a dropped connection or an "unavailable" error it is
// sent again, unless the history shows the turn was stored after all.
(() => {
  const root = document.querySelector(".chat");
  const id = root.dataset.conversationId;
  const api = `/api/conversations/${encodeURIComponent(id)}`;
  const list = document.getElementById("messages");
  const status = document.getElementById("status");
  const form = document.getElementById("composer");
  const input = document.getElementById("text");
  const send = document.getElementById("send");
  const undo = document.getElementById("undo");
  const another = document.getElementById("another");
  const forked = document.getElementById("forked");
  let history = [];
  let socket = null;
  let retry = 0;
  let busy = false;
  let streaming = null;
  let pending = null;  // the text of the turn sent and not yet in the history
  let failed = null;  // the turn refused for good, {text, detail}: shown until the next send
  let resendTimer = null;
  const running = {};  // tool calls waiting for their result, by id

  const csrf = () => (document.cookie.match(/(?:^|; )csrftoken=([^;]+)/) || [])[1] || "";
  const text = (content) => typeof content === "string" ? content
    : (content || []).filter((part) => part.type === "text").map((part) => part.text).join(" ");

  function bubble(content, who) {
    const item = document.createElement("li");
    item.className = who;
    item.textContent = content;
    list.appendChild(item);
    list.scrollTop = list.scrollHeight;
    return item;
  }

  function toolLine(call, outcome) {
    const args = Object.values(call.input || {}).join(", ");
    const said = outcome.error !== undefined ? `failed: ${outcome.error}` : outcome.output;
    return `Tool: ${call.name}(${args}) → ${said}`;
  }

  function render() {
    list.replaceChildren();
    const calls = {};
    for (const message of history) {
      if (message.role === "user") bubble(text(message.content), message.metadata ? "tool" : "me");
      else if (message.role === "assistant") {
        for (const call of message.toolCalls || []) calls[call.id] = call;
        if (text(message.content)) bubble(text(message.content), "bot");
      } else if (message.role === "tool") {
        const call = calls[message.toolCallId] || { name: "tool", input: {} };
        bubble(toolLine(call, JSON.parse(message.content)), "tool");
      }
    }
    if (pending !== null) bubble(pending, "me unsent");
    if (failed !== null) {  // the history does not hold it: kept on screen, and in the box
      bubble(failed.text, "me failed");
      bubble(`⚠ ${failed.detail}`, "bot");
    }
    setBusy(busy);
  }

  function sendPending() {
    clearTimeout(resendTimer);
    if (pending === null || !socket || socket.readyState !== WebSocket.OPEN) return;
    for (const item of list.querySelectorAll("li.unsent")) item.classList.remove("unsent");
    setBusy(true);
    socket.send(JSON.stringify({ type: "send", input: pending }));
  }

  async function settlePending() {  // after a reconnect: stored already, or to send again?
    if (pending === null) return;
    await load();
    const last = lastUserIndex();
    if (last >= 0 && text(history[last].content) === pending) { pending = null; render(); return; }
    sendPending();
  }

  function lastUserIndex() {
    for (let index = history.length - 1; index >= 0; index -= 1) {
      if (history[index].role === "user" && !history[index].metadata) return index;
    }
    return -1;
  }

  function setBusy(on) {
    busy = on;
    send.disabled = on;
    undo.disabled = on || lastUserIndex() < 0;
    another.disabled = on || lastUserIndex() < 0;
  }

  async function call(method, path, body) {
    const response = await fetch(`${api}/${path}`, {
      method,
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = response.status === 204 ? {} : await response.json();
    if (!response.ok) throw Object.assign(new Error(data.detail || response.statusText), data);
    return data;
  }

  async function load() {
    try {
      history = (await call("GET", "history/")).messages;
      const header = await call("GET", "");
      if (header.forked_from) {
        const from = header.forked_from;
        forked.hidden = false;
        forked.innerHTML = "";
        forked.append("Forked from ");
        const link = document.createElement("a");
        link.href = `/assistant/${encodeURIComponent(from.id)}/`;
        link.textContent = from.id;
        forked.append(link, ` after ${from.messageCount} messages.`);
      }
    } catch (error) {
      // Not there yet: an empty history. Anything else (offline, a restart): what is on
      // screen stays as it was, and the next load brings it up to date.
      if (error.code === "conversation-not-found") history = [];
      else {
        render();
        bubble(`⚠ ${error.message}`, "bot");
        return;
      }
    }
    render();
  }

  function handle(frame) {
    if (frame.type === "changed") {
      // Another tab or device stored a turn: show it (this tab's own turn, if one runs,
      // brings the history with its result).
      if (!busy) load();
      return;
    }
    if (frame.type === "delta") {
      if (!streaming) streaming = bubble("", "bot streaming");
      streaming.textContent += frame.text;
      list.scrollTop = list.scrollHeight;
    } else if (frame.type === "cached") {
      // The answer came from the semantic cache, not the model: say so on it.
      if (streaming) {
        streaming.classList.add("cached");
        streaming.title = `answered from the cache (${frame.step} match)`;
      }
    } else if (frame.type === "tool-call") {
      streaming = null;
      running[frame.id] = { call: frame, line: bubble(`${toolLine(frame, { output: "…" })}`, "tool") };
    } else if (frame.type === "tool-result") {
      const started = running[frame.id];
      if (started) started.line.textContent = toolLine(started.call, frame);
      delete running[frame.id];
    } else if (frame.type === "result") {
      if (streaming) streaming.classList.remove("streaming");
      streaming = null;
      pending = null;
      history = history.concat(frame.messages);
      setBusy(false);
    } else if (frame.type === "error" && ["unavailable", "throttled"].includes(frame.code)) {
      streaming = null;  // nothing was stored: the message goes again shortly
      setBusy(false);
      for (const item of list.querySelectorAll("li.me:last-of-type")) item.classList.add("unsent");
      resendTimer = setTimeout(settlePending, 1000 * (frame.retry_after || 2));
    } else if (frame.type === "error") {
      streaming = null;
      // Refused for good: what was said and why stay on screen past the reload of the
      // history (which does not hold them), and the text goes back in the box to send again.
      if (pending !== null) {
        failed = { text: pending, detail: frame.detail };
        if (!input.value) input.value = pending;
      } else {
        bubble(`⚠ ${frame.detail}`, "bot");
      }
      pending = null;
      setBusy(false);
      load();
    }
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/ws/conversations/${encodeURIComponent(id)}/`);
    socket.onopen = () => {
      retry = 0; status.textContent = "online"; status.className = "status online";
      settlePending();
    };
    socket.onmessage = (message) => handle(JSON.parse(message.data));
    socket.onclose = (event) => {
      status.className = "status";
      if (event.code === 4403) { status.textContent = "not your conversation"; setBusy(true); return; }
      status.textContent = "reconnecting…";
      if (busy) { setBusy(false); streaming = null; render(); }
      setTimeout(connect, Math.min(5000, 250 * 2 ** retry++));
    };
  }

  form.addEventListener("submit", (submit) => {
    submit.preventDefault();
    const said = input.value.trim();
    if (!said || busy || !socket || socket.readyState !== WebSocket.OPEN) return;
    if (failed !== null) { failed = null; render(); }
    bubble(said, "me");
    pending = said;
    setBusy(true);
    socket.send(JSON.stringify({ type: "send", input: said }));
    input.value = "";
  });

  undo.addEventListener("click", async () => {
    const keep = lastUserIndex();
    if (keep < 0) return;
    setBusy(true);
    try {
      await call("POST", "truncate/", { message_count: keep });
    } catch (error) {  // nothing was undone (offline, a refusal): the transcript stays
      setBusy(false);
      bubble(`⚠ ${error.message}`, "bot");
      return;
    }
    busy = false;
    await load();
  });

  another.addEventListener("click", async () => {
    const keep = lastUserIndex();
    if (keep < 0) return;
    const question = text(history[keep].content);
    setBusy(true);
    try {
      const fork = await call("POST", "fork/", { message_count: keep });  // the server names it
      sessionStorage.setItem(`warlock-draft:${fork.id}`, question);
      location.href = `/assistant/${encodeURIComponent(fork.id)}/`;
    } catch (error) {
      bubble(`⚠ ${error.message}`, "bot");
      setBusy(false);
    }
  });

  input.value = sessionStorage.getItem(`warlock-draft:${id}`) || "";
  sessionStorage.removeItem(`warlock-draft:${id}`);
  window.warlockAssistant = { socket: () => socket, history: () => history, busy: () => busy };
  // A new conversation has nothing to read yet (asking would log a 404 in the console).
  (root.dataset.started === "1" ? load() : Promise.resolve(render())).then(connect);
})();
