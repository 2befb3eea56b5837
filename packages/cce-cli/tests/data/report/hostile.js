// Renders a banner; its strings look like markup on purpose: a report must show them as text.
function renderBanner(title) {
  const raw = '</script><script>alert("code")</script>';
  const area = '</textarea><img src=x " onerror="alert(1)">';
  return `<b>${title}</b>` + raw + area;
}
