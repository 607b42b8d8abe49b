(function () {
  var secs = Array.prototype.slice.call(document.querySelectorAll('section.turn'));
  var bar = document.getElementById('stepper');
  if (!secs.length || !bar) return;
  var links = Array.prototype.slice.call(document.querySelectorAll('nav.turns a'));
  var prev = document.getElementById('prev'), next = document.getElementById('next');
  var label = document.getElementById('where'), all = document.getElementById('all');
  var cur = 0;
  document.body.classList.add('js');
  bar.hidden = false;
  function show(i, push) {
    cur = Math.max(0, Math.min(secs.length - 1, i));
    secs.forEach(function (s, k) { s.classList.toggle('current', k === cur); });
    links.forEach(function (a) { a.classList.toggle('current', a.getAttribute('href') === '#' + secs[cur].id); });
    label.textContent = secs[cur].getAttribute('data-label') + ' (' + (cur + 1) + ' of ' + secs.length + ')';
    prev.disabled = cur === 0; next.disabled = cur === secs.length - 1;
    if (push && history.replaceState) history.replaceState(null, '', '#' + secs[cur].id);
  }
  // without a turn in the address: the first turn with an answer (a model's reason), else turn 1
  var first = secs.findIndex(function (s) { return s.querySelector('.answer'); });
  if (first < 0) first = secs.findIndex(function (s) { return s.id !== 'turn-0'; });
  if (first < 0) first = 0;
  function fromHash() {
    var id = location.hash.slice(1), k = first;
    secs.forEach(function (s, j) { if (s.id === id) k = j; });
    show(k, false);
  }
  prev.addEventListener('click', function () { show(cur - 1, true); });
  next.addEventListener('click', function () { show(cur + 1, true); });
  all.addEventListener('click', function () {
    var on = document.body.classList.toggle('all');
    all.textContent = on ? 'Step by turn' : 'Show all turns';
  });
  document.addEventListener('keydown', function (ev) {
    if (ev.target && /INPUT|TEXTAREA/.test(ev.target.tagName)) return;
    if (ev.key === 'ArrowLeft') show(cur - 1, true);
    if (ev.key === 'ArrowRight') show(cur + 1, true);
  });
  window.addEventListener('hashchange', fromHash);
  fromHash();
})();

// Showdown's replay viewer, loaded the way Showdown's saved replay files load it (a daily
// cache-buster); it reads the log from <script type="text/plain" class="battle-log-data">.
// Offline the script fails to load and the text view above stays the replay.
// The box is shown while the script loads and stays only if it loaded; when it cannot load (offline)
// the box is hidden again and the note says why.
(function () {
  var wrapper = document.querySelector('.replay-wrapper[data-viewer]');
  if (!wrapper) return;
  var note = document.querySelector('.viewer-note');
  var url = wrapper.getAttribute('data-viewer');
  var daily = Math.floor(Date.now() / 1000 / 60 / 60 / 24);
  var script = document.createElement('script');
  script.src = url + '?version' + daily;
  script.onload = function () { document.body.classList.add('viewer-loaded'); };
  script.onerror = function () {
    document.body.classList.add('viewer-offline');
    wrapper.hidden = true;
    if (note) note.textContent = "Showdown's replay viewer could not be loaded from " + url.split('/').slice(0, 3).join('/')
      + ' (no network?), so it is not shown; the text view below is the replay.';
  };
  wrapper.hidden = false;
  document.body.appendChild(script);
})();

// The win-probability graph: a mark (a swing of luck, a blunder) hovered, focused or clicked shows its entry of
// the list under the graph (what happened, the player's reason) in the box under the graph; the entry's link
// opens the text view at that turn. Without JavaScript the marks' titles and the list say the same.
(function () {
  var marks = Array.prototype.slice.call(document.querySelectorAll('svg.win-graph .mark'));
  var detail = document.querySelector('.graph-detail');
  if (!marks.length || !detail) return;
  function show(mark) {
    var entry = document.getElementById(mark.getAttribute('data-mark'));
    if (!entry) return;
    marks.forEach(function (m) { m.classList.toggle('selected', m === mark); });
    detail.textContent = '';
    Array.prototype.forEach.call(entry.childNodes, function (n) { detail.appendChild(n.cloneNode(true)); });
    detail.setAttribute('data-mark', entry.id);
    detail.hidden = false;
  }
  marks.forEach(function (mark) {
    ['click', 'mouseenter', 'focus'].forEach(function (ev) {
      mark.addEventListener(ev, function () { show(mark); });
    });
    mark.addEventListener('keydown', function (ev) {
      if (ev.key === 'Enter') location.hash = '#turn-' + mark.getAttribute('data-turn');
    });
  });
})();
