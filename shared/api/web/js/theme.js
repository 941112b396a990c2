// The chosen theme, before the first paint: none means the OS's.
try {
  const t = localStorage.getItem("letagents.theme");
  if (t === "light" || t === "dark") document.documentElement.dataset.theme = t;
} catch { /* storage unavailable: the OS's theme */ }
