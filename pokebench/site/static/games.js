// The games table: click a column to sort the mirror pairs by it (again to reverse), type to filter,
// tick to keep only pairs with re-asks. Each mirror pair is one <tbody>: sorting moves whole pairs (by
// the pair's own value when it has one, else its first game's), filtering shows a pair when any of its
// games matches. The reason search (games page) lists the answers whose reason has every word typed and
// keeps the pairs of those games. Text is set as text, never as HTML. Without JavaScript: the plain table.
(function () {
  var each = function (list, fn) { Array.prototype.forEach.call(list, fn); };
  var search = document.querySelector('section.reason-search');
  var reasonHits = null;  // uids of the games whose reasons match, or null when no search
  var refilters = [];

  each(document.querySelectorAll('table.games.sortable'), function (table) {
    var wrap = table.closest('.scroll');
    var tools = wrap && wrap.previousElementSibling && wrap.previousElementSibling.classList.contains('table-tools')
      ? wrap.previousElementSibling : null;
    var groups = Array.prototype.slice.call(table.tBodies);
    function value(group, key) {
      if (group.hasAttribute('data-' + key)) return group.getAttribute('data-' + key);
      var row = group.rows[0];
      return row ? (row.getAttribute('data-' + key) || '') : '';
    }
    // a per-game figure of a column marked data-extreme (luck): the pair's lowest game when sorting up, its
    // highest when sorting down, so the unluckiest or the luckiest game's pair comes first
    function extreme(group, key, desc) {
      var values = Array.prototype.map.call(group.rows, function (r) { return r.getAttribute('data-' + key) || ''; })
        .filter(function (v) { return v !== '' && !isNaN(parseFloat(v)); }).map(parseFloat);
      if (!values.length) return '';
      return String(desc ? Math.max.apply(null, values) : Math.min.apply(null, values));
    }
    function compare(a, b) {
      var x = parseFloat(a), y = parseFloat(b);
      if (!isNaN(x) && !isNaN(y) && String(x) === a.trim() && String(y) === b.trim()) return x - y;
      return a.localeCompare(b);
    }
    each(table.tHead.rows[0].cells, function (th) {
      var key = th.getAttribute('data-key');
      if (!key) return;
      th.setAttribute('role', 'button');
      th.addEventListener('click', function () {
        var desc = th.classList.contains('asc');
        each(table.tHead.rows[0].cells, function (c) { c.classList.remove('asc', 'desc'); });
        th.classList.add(desc ? 'desc' : 'asc');
        var pick = th.hasAttribute('data-extreme') ? function (g) { return extreme(g, key, desc); }
          : function (g) { return value(g, key); };
        groups.sort(function (g, h) {
          var a = pick(g), b = pick(h);
          if (a === '' || b === '') return (a === '') - (b === '');  // missing last either way
          var c = compare(a, b);
          return desc ? -c : c;
        });
        groups.forEach(function (g) { table.appendChild(g); });
      });
    });
    if (!tools) return;
    tools.hidden = false;
    var input = tools.querySelector('input.filter'), shown = tools.querySelector('.shown');
    var reasks = tools.querySelector('input.only-reasks');
    function filter() {
      var q = input.value.trim().toLowerCase(), n = 0;
      groups.forEach(function (g) {
        var hit = (!q || g.textContent.toLowerCase().indexOf(q) >= 0)
          && (!reasks || !reasks.checked || parseFloat(g.getAttribute('data-reasks')) > 0)
          && (!reasonHits || Array.prototype.some.call(g.rows, function (r) { return reasonHits[r.getAttribute('data-uid')]; }));
        g.hidden = !hit;
        if (hit) n += 1;
      });
      shown.textContent = n + ' of ' + groups.length + ' pairs';
    }
    input.addEventListener('input', filter);
    if (reasks) reasks.addEventListener('change', filter);  // none where no game called a model
    refilters.push(filter);
    filter();
  });

  if (!search || !window.POKEBENCH_REASONS) return;
  search.hidden = false;
  var query = search.querySelector('input.reason-query'), count = search.querySelector('.reason-count');
  var list = search.querySelector('ol.reason-hits'), LIMIT = 100;
  var label = {};
  each(document.querySelectorAll('table.games tr[data-uid]'), function (row) {
    var body = row.parentNode;
    label[row.getAttribute('data-uid')] = body.getAttribute('data-matchup') + ', pair ' + body.getAttribute('data-pair')
      + ', game ' + row.getAttribute('data-game');
  });
  function run() {
    var words = query.value.toLowerCase().split(/\s+/).filter(Boolean);
    list.textContent = '';
    if (!words.length) { reasonHits = null; count.textContent = ''; refilters.forEach(function (f) { f(); }); return; }
    var hits = window.POKEBENCH_REASONS.filter(function (r) {
      var text = r[3].toLowerCase();
      return words.every(function (w) { return text.indexOf(w) >= 0; });
    });
    reasonHits = {};
    hits.forEach(function (r) { reasonHits[r[0]] = true; });
    count.textContent = hits.length + ' reason' + (hits.length === 1 ? '' : 's') + ' in '
      + Object.keys(reasonHits).length + ' game(s)' + (hits.length > LIMIT ? '; the first ' + LIMIT + ' listed' : '');
    hits.slice(0, LIMIT).forEach(function (r) {
      var li = document.createElement('li'), a = document.createElement('a');
      a.href = 'replays/' + encodeURIComponent(r[0]) + '.html' + (r[1] === null ? '' : '#turn-' + r[1]);
      a.textContent = (label[r[0]] || r[0]) + (r[1] === null ? '' : ', turn ' + r[1]);
      li.appendChild(a);
      li.appendChild(document.createTextNode(' · ' + r[2] + ': '));
      var q = document.createElement('q');
      q.textContent = r[3];
      li.appendChild(q);
      list.appendChild(li);
    });
    refilters.forEach(function (f) { f(); });
  }
  query.addEventListener('input', run);
})();
