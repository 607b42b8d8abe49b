// The games table: click a column to sort the mirror pairs by it (again to reverse), type to filter.
// Each mirror pair is one <tbody>: sorting moves whole pairs (by the value of their first game),
// filtering shows a pair when any of its games matches. Without JavaScript: the plain table.
(function () {
  var tables = document.querySelectorAll('table.games.sortable');
  Array.prototype.forEach.call(tables, function (table) {
    var wrap = table.closest('.scroll');
    var tools = wrap && wrap.previousElementSibling && wrap.previousElementSibling.classList.contains('table-tools')
      ? wrap.previousElementSibling : null;
    var groups = Array.prototype.slice.call(table.tBodies);
    function value(group, key) {
      if (group.hasAttribute('data-' + key)) return group.getAttribute('data-' + key);
      var row = group.rows[0];
      return row ? (row.getAttribute('data-' + key) || '') : '';
    }
    function compare(a, b) {
      var x = parseFloat(a), y = parseFloat(b);
      if (!isNaN(x) && !isNaN(y) && String(x) === a.trim() && String(y) === b.trim()) return x - y;
      return a.localeCompare(b);
    }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      var key = th.getAttribute('data-key');
      if (!key) return;
      th.setAttribute('role', 'button');
      th.addEventListener('click', function () {
        var desc = th.classList.contains('asc');
        Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.classList.remove('asc', 'desc'); });
        th.classList.add(desc ? 'desc' : 'asc');
        groups.sort(function (g, h) {
          var c = compare(value(g, key), value(h, key));
          return desc ? -c : c;
        });
        groups.forEach(function (g) { table.appendChild(g); });
      });
    });
    if (!tools) return;
    tools.hidden = false;
    var input = tools.querySelector('input.filter'), shown = tools.querySelector('.shown');
    function filter() {
      var q = input.value.trim().toLowerCase(), n = 0;
      groups.forEach(function (g) {
        var hit = !q || g.textContent.toLowerCase().indexOf(q) >= 0;
        g.hidden = !hit;
        if (hit) n += 1;
      });
      shown.textContent = n + ' of ' + groups.length + ' pairs';
    }
    input.addEventListener('input', filter);
    filter();
  });
})();
