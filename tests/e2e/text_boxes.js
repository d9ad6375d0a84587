// What covers or cuts text on the page as drawn (issue 34), as a list of sentences (empty: nothing). Called by
// tests/e2e/test_layout.py with `desktop` (true at 1280 px: a table that must scroll sideways there cuts text).
//
// Text boxes: each line box of every visible text node (Range.getClientRects), and each form field. Checked:
// - two boxes of different text sharing more than 1 px each way, counting only the parts the boxes' clipping
//   and scrolling ancestors leave visible (a badge run into the next cell, a chart's labels on each other);
// - a box reaching more than 1 px past an ancestor that clips (overflow hidden or clip), unless that ancestor
//   shows an ellipsis and carries its whole text in a title; at 1280 px also one cut by the edge of the scrolling
//   box of a table that is not a board ("Reru" at the end of the Jobs table);
// - a field whose value is wider than the field.
(desktop) => {
  const SKIP = new Set(["SCRIPT", "STYLE", "TITLE", "NOSCRIPT", "OPTION", "TEXTAREA", "TEMPLATE"]);
  // Not drawn: inside a closed <details> (Chromium lays it out all the same, content-visibility: hidden),
  // invisible, or visually hidden for screen readers (clip: rect(0 0 0 0)).
  const hidden = (el) => {
    if (!el.checkVisibility({ contentVisibilityAuto: true, opacityProperty: true, visibilityProperty: true })) {
      return true;
    }
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const clip = getComputedStyle(e).clip;
      if (clip && clip !== "auto") return true;
    }
    return false;
  };
  const clipping = (e) => getComputedStyle(e).overflowX !== "visible" || getComputedStyle(e).overflowY !== "visible";
  // The part of a box that the ancestors from `start` up that clip or scroll leave visible (null: none).
  const visiblePart = (start, r) => {
    let { left, right, top, bottom } = r;
    for (let e = start; e && e !== document.documentElement; e = e.parentElement) {
      if (!clipping(e)) continue;
      const s = getComputedStyle(e);
      const box = e.getBoundingClientRect();
      const l = box.left + e.clientLeft;
      const t = box.top + e.clientTop;
      if (s.overflowX !== "visible") [left, right] = [Math.max(left, l), Math.min(right, l + e.clientWidth)];
      if (s.overflowY !== "visible") [top, bottom] = [Math.max(top, t), Math.min(bottom, t + e.clientHeight)];
    }
    return right - left > 0 && bottom - top > 0 ? { left, right, top, bottom } : null;
  };
  const describe = (el, text) => {
    const classes = typeof el.className === "string" && el.className.trim() ? "." + el.className.trim().split(/\s+/).join(".") : "";
    return `${el.tagName.toLowerCase()}${classes} "${text.trim().replace(/\s+/g, " ").slice(0, 50)}"`;
  };

  const problems = [];
  const boxes = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || !node.textContent.trim() || SKIP.has(el.tagName) || hidden(el)) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      if (r.width < 1 || r.height < 1) continue;
      boxes.push({ node, from: el, r, seen: visiblePart(el, r), what: describe(el, node.textContent) });
    }
  }
  for (const el of document.querySelectorAll("input, select")) {
    if (["hidden", "checkbox", "radio"].includes(el.type) || hidden(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) continue;
    const what = describe(el, el.name || el.type);
    boxes.push({ node: el, from: el.parentElement, r, seen: visiblePart(el.parentElement, r), what });
    if (el.tagName === "INPUT" && el.scrollWidth > el.clientWidth + 1) {
      problems.push(`value cut in its field (${el.scrollWidth} px in ${el.clientWidth} px): ${what}`);
    }
  }

  const shown = boxes.filter((box) => box.seen).sort((a, b) => a.seen.top - b.seen.top);
  for (let i = 0; i < shown.length; i++) {
    const a = shown[i];
    for (let j = i + 1; j < shown.length && shown[j].seen.top < a.seen.bottom - 1; j++) {
      const b = shown[j];
      if (a.node === b.node) continue;
      const w = Math.min(a.seen.right, b.seen.right) - Math.max(a.seen.left, b.seen.left);
      const h = Math.min(a.seen.bottom, b.seen.bottom) - Math.max(a.seen.top, b.seen.top);
      if (w > 1 && h > 1) problems.push(`overlap ${Math.round(w)}×${Math.round(h)} px: ${a.what} and ${b.what}`);
    }
  }

  for (const { from, r, what } of boxes) {
    for (let e = from; e && e !== document.body; e = e.parentElement) {
      if (!clipping(e)) continue;
      const s = getComputedStyle(e);
      const scrolls = ["auto", "scroll"].includes(s.overflowX);
      // A board or models view may scroll sideways by design (its rank and model columns stay in view).
      if (scrolls && !(desktop && e.querySelector("table:not(.leaderboard)"))) continue;
      const box = e.getBoundingClientRect();
      const left = box.left + e.clientLeft;
      const right = left + e.clientWidth;
      const past = Math.max(left - r.left, r.right - right);
      if (past <= 1) continue;
      if (!scrolls && s.textOverflow === "ellipsis" && e.closest("[title]")) break;
      const how = scrolls ? "a table's scrolling box" : `${e.tagName.toLowerCase()} with overflow ${s.overflowX}`;
      problems.push(`cut by ${Math.round(past)} px by ${how}: ${what}`);
      break;
    }
  }
  return problems;
}
