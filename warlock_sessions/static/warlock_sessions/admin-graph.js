// Draws the session's agent (a Mermaid flowchart in #agent-graph) with the script served
// from this app's static files: nothing is fetched from the internet. The drawing fits the
// box's width; "+" and "−" zoom in and out, "Fit" goes back, and a zoomed drawing is moved
// by dragging it (or by scrolling the box).
mermaid.initialize({ startOnLoad: false, securityLevel: "strict", flowchart: { useMaxWidth: true } });

mermaid.run({ querySelector: "#agent-graph" }).then(() => {
  const box = document.querySelector(".warlock-graph");
  const svg = box && box.querySelector("svg");
  if (!svg) return;
  const natural = svg.viewBox.baseVal.width || svg.getBoundingClientRect().width;
  let zoom = 1; // 1: the box's width (or the drawing's own, if smaller)

  function apply() {
    const fitted = Math.min(natural, box.clientWidth);
    svg.style.maxWidth = "none";
    svg.style.width = `${fitted * zoom}px`;
    svg.style.height = "auto";
    box.classList.toggle("zoomed", zoom > 1);
  }

  const controls = document.createElement("div");
  controls.className = "warlock-graph-controls";
  for (const [label, title, change] of [
    ["−", "Zoom out", () => (zoom = Math.max(1, zoom / 1.5))],
    ["Fit", "Fit the width", () => (zoom = 1)],
    ["+", "Zoom in", () => (zoom = Math.min(8, zoom * 1.5))],
  ]) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.title = title;
    button.addEventListener("click", () => { change(); apply(); });
    controls.append(button);
  }
  box.before(controls);

  let dragging = null;
  box.addEventListener("pointerdown", (event) => {
    if (zoom === 1) return;
    dragging = { x: event.clientX, y: event.clientY, left: box.scrollLeft, top: box.scrollTop };
    box.setPointerCapture(event.pointerId);
  });
  box.addEventListener("pointermove", (event) => {
    if (!dragging) return;
    box.scrollLeft = dragging.left - (event.clientX - dragging.x);
    box.scrollTop = dragging.top - (event.clientY - dragging.y);
  });
  box.addEventListener("pointerup", () => (dragging = null));
  window.addEventListener("resize", apply);
  apply();
});
