// Draws the session's agent (a Mermaid flowchart in #agent-graph) with the script served
// from this app's static files: nothing is fetched from the internet. On first paint the whole
// drawing fits its box (width and height, the box's padding counted) when it can be read that
// small; when it cannot (many flows, a phone), the flow the session is in fits the box instead
// (or its width, when it is long; never smaller than readable), centred on the step it is at. "Fit" shows the whole drawing,
// "+" and "−" zoom, and a drawing larger than its box is moved by dragging it (or by scrolling
// the box).
mermaid.initialize({ startOnLoad: false, securityLevel: "strict", flowchart: { useMaxWidth: false } });

// Below this share of its natural size a label is too small to read.
const READABLE = 0.55;

mermaid.run({ querySelector: "#agent-graph" }).then(() => {
  const box = document.querySelector(".warlock-graph");
  const svg = box && box.querySelector("svg");
  if (!svg) return;
  const view = svg.viewBox.baseVal;
  const natural = view && view.width
    ? { width: view.width, height: view.height }
    : { width: svg.getBoundingClientRect().width, height: svg.getBoundingClientRect().height };

  function room() {  // the box's inside, its padding and a scrollbar not counted
    const style = getComputedStyle(box);
    const across = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const tallest = parseFloat(style.maxHeight) || innerHeight * 0.8;
    const down = tallest - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom)
      - (box.offsetHeight - box.clientHeight);
    return { across, down };
  }

  function fitting(size = natural) {  // the scale at which ``size`` (natural) fits the box
    const { across, down } = room();
    return Math.min(1, across / size.width, down / size.height);
  }

  function currentFlow() {  // the drawn box of the flow whose step is highlighted
    const current = svg.querySelector(".current");
    const flow = current && (current.id.match(/(f\d+)_/) || [])[1];
    return flow ? svg.querySelector(`g.cluster[id*="${flow}_box"]`) : null;
  }

  let scale = 1;

  function draw() {
    svg.style.maxWidth = "none";
    svg.style.width = `${natural.width * scale}px`;
    svg.style.height = `${natural.height * scale}px`;
    box.classList.toggle("zoomed", scale > fitting() + 0.001);
  }

  function centre(element) {  // ``element`` (a step, a flow) in the middle of the box
    if (!element) return;
    const at = element.getBoundingClientRect();
    const frame = box.getBoundingClientRect();
    box.scrollLeft += at.left + at.width / 2 - (frame.left + box.clientWidth / 2);
    box.scrollTop += at.top + at.height / 2 - (frame.top + box.clientHeight / 2);
  }

  function fitted(readable) {  // the scale ``fit`` draws at
    const whole = fitting();
    const flow = readable && whole < READABLE ? currentFlow() : null;
    if (!flow) return readable ? Math.max(whole, Math.min(1, READABLE)) : whole;
    // The whole is too small to read: the session's flow fills the box, or its width. Its
    // size in the drawing's own units is its natural size, whatever the scale drawn at.
    const bounds = flow.getBBox();
    const unit = natural.width / (view && view.width ? view.width : natural.width);
    const size = { width: bounds.width * unit, height: bounds.height * unit };
    const inWhole = fitting(size);
    const across = Math.min(1, room().across / size.width);
    return Math.max(Math.min(1, READABLE), inWhole >= READABLE ? inWhole : across);
  }

  function fit(readable) {
    // Twice: the drawing's new size may add or remove the box's scrollbar, and so its room.
    for (let pass = 0; pass < 2; pass += 1) {
      scale = fitted(readable);
      draw();
    }
    const flow = readable ? currentFlow() : null;
    const { across, down } = room();
    const shown = flow && flow.getBoundingClientRect();
    const fitsFlow = shown && shown.width <= across + 1 && shown.height <= down + 1;
    centre(fitsFlow ? flow : svg.querySelector(".current"));
    if (shown && !fitsFlow && shown.width <= across + 1) {  // the flow's width in view, too
      box.scrollLeft += flow.getBoundingClientRect().left - box.getBoundingClientRect().left
        - parseFloat(getComputedStyle(box).paddingLeft);
    }
  }

  const controls = document.createElement("div");
  controls.className = "warlock-graph-controls";
  for (const [label, title, change] of [
    ["−", "Zoom out", () => { scale = Math.max(fitting(), scale / 1.5); draw(); }],
    ["Fit", "Show the whole graph", () => fit(false)],
    ["+", "Zoom in", () => { scale = Math.min(4, scale * 1.5); draw(); }],
  ]) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "button";
    button.textContent = label;
    button.title = title;
    button.addEventListener("click", change);
    controls.append(button);
  }
  box.before(controls);

  let dragging = null;
  box.addEventListener("pointerdown", (event) => {
    if (!box.classList.contains("zoomed")) return;
    dragging = { x: event.clientX, y: event.clientY, left: box.scrollLeft, top: box.scrollTop };
    box.setPointerCapture(event.pointerId);
  });
  box.addEventListener("pointermove", (event) => {
    if (!dragging) return;
    box.scrollLeft = dragging.left - (event.clientX - dragging.x);
    box.scrollTop = dragging.top - (event.clientY - dragging.y);
  });
  box.addEventListener("pointerup", () => (dragging = null));
  // The box's width changes after the first paint too (the admin's sidebar opens or closes, a
  // phone turns): fit again then; a phone's toolbar coming and going changes only the height.
  let width = box.clientWidth;
  new ResizeObserver(() => {
    if (box.clientWidth !== width) { width = box.clientWidth; fit(true); }
  }).observe(box);
  fit(true);
  box.dataset.fitted = "1";  // for the browser tests: drawn and fitted
});
