/*!
 * Support widget embed. Paste into any page of your shop:
 *
 *   <script src="https://<support host>/embed.js" data-shop="<your shop>" async></script>
 *
 * To open the chat as a signed-in customer, have your backend sign a short-lived identity token (HS256 JWT
 * with your widget secret, sub = the customer's email, exp at most 1 h ahead) and pass it either as
 * data-customer-token="<JWT>" on the tag or with window.SupportWidget.identify("<JWT>").
 * window.SupportWidget.reset() goes back to an anonymous chat (call it when the customer signs out).
 *
 * The token travels to the chat iframe over postMessage, never in a URL. Both directions check origins:
 * this script accepts messages only from its own iframe at the widget's origin and posts only to that
 * origin; the iframe talks only to this page's origin, and only if the shop allows it.
 */
(function () {
  "use strict";
  var existing = window.SupportWidget;
  if (existing && existing.__loaded) return;

  var SOURCE = "support-widget";
  var script = document.currentScript || findScript();
  if (!script) return;
  var shop = script.getAttribute("data-shop") || "";
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(shop)) {
    if (window.console) console.warn("[support-widget] data-shop is missing or invalid");
    return;
  }
  var widgetOrigin = new URL(script.src, location.href).origin;
  var identity = script.getAttribute("data-customer-token") || null;
  var OPEN_KEY = "support-widget:open:" + shop;

  var iframe = null;
  var ready = false;
  var isOpen = false;
  var unread = 0;
  var wantFocus = false; // the visitor opened the chat: put the cursor in its input once it is ready

  function findScript() {
    var all = document.querySelectorAll("script[data-shop]");
    for (var i = 0; i < all.length; i++) if (/\/embed\.js(?:[?#]|$)/.test(all[i].src)) return all[i];
    return null;
  }

  var css =
    ".sw-root{position:fixed;right:20px;bottom:20px;z-index:2147483000;font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif}" +
    ".sw-launcher{all:unset;box-sizing:border-box;position:relative;display:flex;align-items:center;justify-content:center;width:56px;height:56px;border-radius:50%;background:#0f172a;color:#fff;cursor:pointer;box-shadow:0 6px 20px rgba(15,23,42,.3)}" +
    ".sw-launcher:hover{background:#1e293b}" +
    ".sw-launcher:focus-visible{outline:3px solid #2563eb;outline-offset:3px}" +
    ".sw-launcher svg{width:26px;height:26px}" +
    ".sw-badge{position:absolute;top:-4px;right:-4px;min-width:20px;height:20px;padding:0 5px;box-sizing:border-box;border-radius:10px;background:#dc2626;color:#fff;font:600 12px/20px system-ui,sans-serif;text-align:center}" +
    ".sw-badge[hidden]{display:none}" +
    ".sw-panel{position:fixed;right:20px;bottom:88px;width:380px;height:min(640px,calc(100vh - 108px));border-radius:16px;overflow:hidden;background:#fff;box-shadow:0 12px 40px rgba(15,23,42,.28);display:none}" +
    ".sw-open .sw-panel{display:block}" +
    ".sw-panel iframe{display:block;width:100%;height:100%;border:0}" +
    "@media (max-width:480px){" +
    ".sw-panel{inset:0;right:0;bottom:0;width:100%;height:100%;border-radius:0;box-shadow:none}" +
    ".sw-open .sw-launcher{display:none}" +
    "html.sw-lock,html.sw-lock body{overflow:hidden}" +
    "}";

  var style = document.createElement("style");
  style.textContent = css;
  document.head.appendChild(style);

  var root = document.createElement("div");
  root.className = "sw-root";
  var panelId = "sw-panel-" + shop;

  var launcher = document.createElement("button");
  launcher.type = "button";
  launcher.className = "sw-launcher";
  launcher.setAttribute("aria-controls", panelId);
  var chatIcon =
    '<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><path d="M21 12a8 8 0 0 1-11.6 7.1L4 20l1-4.6A8 8 0 1 1 21 12z"/></svg>';
  var closeIcon =
    '<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" aria-hidden="true"><path d="M6 6l12 12M18 6L6 18"/></svg>';
  var icon = document.createElement("span");
  var badge = document.createElement("span");
  badge.className = "sw-badge";
  badge.hidden = true;
  badge.setAttribute("aria-hidden", "true");
  launcher.appendChild(icon);
  launcher.appendChild(badge);

  var panel = document.createElement("div");
  panel.className = "sw-panel";
  panel.id = panelId;

  root.appendChild(panel);
  root.appendChild(launcher);

  function render() {
    root.className = "sw-root" + (isOpen ? " sw-open" : "");
    document.documentElement.classList.toggle("sw-lock", isOpen);
    icon.innerHTML = isOpen ? closeIcon : chatIcon; // static markup only
    launcher.setAttribute("aria-expanded", String(isOpen));
    var label = isOpen ? "Close support chat" : "Open support chat";
    if (!isOpen && unread > 0) label += " (" + unread + (unread === 1 ? " new reply)" : " new replies)");
    launcher.setAttribute("aria-label", label);
    badge.hidden = isOpen || unread === 0;
    badge.textContent = unread > 9 ? "9+" : String(unread);
  }

  function post(message) {
    if (!iframe || !iframe.contentWindow) return;
    message.source = SOURCE;
    iframe.contentWindow.postMessage(message, widgetOrigin); // exact origin, never "*"
  }

  function mount() {
    if (iframe) return;
    iframe = document.createElement("iframe");
    iframe.title = "Support chat";
    iframe.src = widgetOrigin + "/widget?shop=" + encodeURIComponent(shop) + "&parent=" + encodeURIComponent(location.origin);
    iframe.setAttribute("referrerpolicy", "origin");
    panel.appendChild(iframe);
  }

  function remember() {
    try {
      if (isOpen) sessionStorage.setItem(OPEN_KEY, "1");
      else sessionStorage.removeItem(OPEN_KEY);
    } catch (e) {
      /* storage blocked: the chat just won't reopen by itself after a reload */
    }
  }

  function open(restoring) {
    mount();
    isOpen = true;
    unread = 0;
    render();
    remember();
    // Don't steal focus when the chat reopens by itself after a reload.
    wantFocus = restoring !== true;
    if (ready) {
      post({ type: "visibility", open: true, focus: wantFocus });
      wantFocus = false;
    }
    if (restoring !== true) iframe.focus();
  }

  function close() {
    if (!isOpen) return;
    isOpen = false;
    render();
    remember();
    post({ type: "visibility", open: false });
    launcher.focus();
  }

  function identify(token) {
    identity = typeof token === "string" && token ? token : null;
    if (ready) post({ type: "identify", identity: identity });
  }

  window.addEventListener("message", function (event) {
    // Only our own iframe, at the widget's origin. Anything else on the page is ignored.
    if (!iframe || event.source !== iframe.contentWindow || event.origin !== widgetOrigin) return;
    var data = event.data;
    if (!data || data.source !== SOURCE) return;
    if (data.type === "ready") {
      ready = true;
      post({ type: "init", identity: identity, open: isOpen, focus: isOpen && wantFocus });
      wantFocus = false;
    } else if (data.type === "close") {
      close();
    } else if (data.type === "unread") {
      var n = Number(data.count);
      unread = isOpen || !(n >= 0) ? 0 : Math.min(n, 99);
      render();
    }
  });

  launcher.addEventListener("click", function () {
    if (isOpen) close();
    else open();
  });

  render();
  // The page owns its DOM, and a framework may drop our root: React discards nodes it did not render when hydration
  // has to start over, and this script can run before <body> exists (an async script already in the cache). Keep the
  // root in <body>, putting it back whenever it leaves (its iframe reloads and says "ready" again).
  var watchedBody = null;
  function keepAttached() {
    var home = document.body || document.documentElement;
    if (root.parentNode !== home) home.appendChild(root);
    if (document.body && document.body !== watchedBody) {
      watchedBody = document.body;
      keeper.observe(watchedBody, { childList: true });
    }
  }
  var keeper = new MutationObserver(keepAttached);
  keeper.observe(document.documentElement, { childList: true });
  keepAttached();

  var api = {
    __loaded: true,
    open: function () {
      open();
    },
    close: close,
    toggle: function () {
      if (isOpen) close();
      else open();
    },
    identify: identify,
    reset: function () {
      identify(null);
    },
  };
  window.SupportWidget = api;

  // Calls queued before this script loaded: window.SupportWidget = [["identify", token], ["open"]].
  if (Array.isArray(existing)) {
    existing.forEach(function (call) {
      if (call && typeof api[call[0]] === "function" && call[0] !== "__loaded") api[call[0]].apply(null, call.slice(1));
    });
  }

  var reopen = false;
  try {
    reopen = sessionStorage.getItem(OPEN_KEY) === "1";
  } catch (e) {
    /* ignore */
  }
  if (reopen) open(true);
})();
