// The two checks of RuleSet (gbnf_emit.h) that the matcher would otherwise fail on late:
// rules with no finite text, and rules that reach themselves before reading a character.
#include <algorithm>
#include <cctype>

#include "text/gbnf_emit.h"
#include "wick/error.h"

namespace wick::text::gbnf {
namespace {

// The rules as a graph for the two checks: node = a rule or a ( group ), each a list of
// alternatives, each a sequence of items.
struct Item {
  int node;     // a rule or group; kText for a literal, class or '.', kEmpty for ""
  int64_t min;  // of its repetition
};
constexpr int kText = -1, kEmpty = -2;

struct Graph {
  std::vector<std::vector<std::vector<Item>>> nodes;
  size_t rules = 0;  // the first nodes are the rules
};

void parse_alternatives(std::string_view s, size_t& i, Graph& g, size_t node,
                        const std::unordered_map<std::string, size_t>& index) {
  g.nodes[node].emplace_back();
  while (i < s.size()) {
    const char c = s[i];
    if (c == ' ') {
      ++i;
    } else if (c == ')') {
      return;
    } else if (c == '|') {
      ++i;
      g.nodes[node].emplace_back();
    } else if (c == '*' || c == '?' || c == '+' || c == '{') {
      Item& last = g.nodes[node].back().back();
      last.min = c == '+' ? 1 : 0;
      if (c == '{') {
        while (++i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
          last.min = last.min * 10 + (s[i] - '0');
        i = s.find('}', i);
      }
      ++i;
    } else if (c == '(') {
      const size_t group = g.nodes.size();
      g.nodes.emplace_back();
      ++i;
      parse_alternatives(s, i, g, group, index);
      ++i;  // ')'
      g.nodes[node].back().push_back({static_cast<int>(group), 1});
    } else {
      const size_t end = item_end(s, i);
      WICK_CHECK(end != std::string_view::npos, Internal, "gbnf: malformed rule body at ", i);
      const std::string_view item = s.substr(i, end - i);
      int kind = kText;
      if (item == "\"\"") {
        kind = kEmpty;
      } else if (c != '"' && c != '[' && c != '.') {
        auto it = index.find(std::string(item));
        WICK_CHECK(it != index.end(), Internal, "gbnf: undefined rule ", item);
        kind = static_cast<int>(it->second);
      }
      g.nodes[node].back().push_back({kind, 1});
      i = end;
    }
  }
}

Graph parse_graph(const std::vector<std::string>& bodies, const std::unordered_map<std::string, size_t>& index) {
  Graph g;
  g.rules = bodies.size();
  g.nodes.resize(bodies.size());
  for (size_t r = 0; r < bodies.size(); ++r) {
    size_t i = 0;
    parse_alternatives(bodies[r], i, g, r, index);
  }
  return g;
}

// The nodes that derive some text (nullable_only: the empty text), by the usual worklist:
// an alternative holds once every required item it depends on does.
std::vector<bool> derives(const Graph& g, bool nullable_only) {
  std::vector<bool> done(g.nodes.size());
  std::vector<std::pair<size_t, int64_t>> alts;  // (node, items still needed)
  std::vector<std::vector<size_t>> users(g.nodes.size());
  std::vector<size_t> work;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (const auto& seq : g.nodes[n]) {
      int64_t need = 0;
      bool possible = true;
      for (const Item& it : seq) {
        if (it.min == 0 || it.node == kEmpty) continue;
        if (it.node == kText) {
          possible = possible && !nullable_only;
        } else {
          ++need;
          users[it.node].push_back(alts.size());
        }
      }
      if (possible && need == 0 && !done[n]) done[n] = true, work.push_back(n);
      alts.push_back({n, possible ? need : -1});
    }
  while (!work.empty()) {
    const size_t n = work.back();
    work.pop_back();
    for (size_t a : users[n]) {
      if (alts[a].second <= 0 || --alts[a].second != 0) continue;
      const size_t head = alts[a].first;
      if (!done[head]) done[head] = true, work.push_back(head);
    }
  }
  return done;
}

}  // namespace

std::vector<std::string> RuleSet::unproductive() const {
  const Graph g = parse_graph(bodies_, index_);
  const std::vector<bool> ok = derives(g, false);
  std::vector<std::string> out;
  for (size_t r = 0; r < g.rules; ++r)
    if (!ok[r]) out.push_back(names_[r]);
  return out;
}

std::optional<std::string> RuleSet::left_recursive() const {
  const Graph g = parse_graph(bodies_, index_);
  const std::vector<bool> nullable = derives(g, true);
  // Edges to the nodes an alternative can start with.
  std::vector<std::vector<size_t>> first(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (const auto& seq : g.nodes[n])
      for (const Item& it : seq) {
        if (it.node >= 0) first[n].push_back(it.node);
        const bool skippable = it.min == 0 || it.node == kEmpty || (it.node >= 0 && nullable[it.node]);
        if (!skippable) break;
      }
  // A cycle among them, by an iterative depth-first search.
  enum : char { kNew, kOnPath, kDone };
  std::vector<char> state(g.nodes.size(), kNew);
  for (size_t start = 0; start < g.nodes.size(); ++start) {
    if (state[start] != kNew) continue;
    std::vector<std::pair<size_t, size_t>> path{{start, 0}};
    state[start] = kOnPath;
    while (!path.empty()) {
      auto& [n, next] = path.back();
      if (next == first[n].size()) {
        state[n] = kDone;
        path.pop_back();
        continue;
      }
      const size_t m = first[n][next++];
      if (state[m] == kNew) {
        state[m] = kOnPath;
        path.push_back({m, 0});
      } else if (state[m] == kOnPath) {
        // The rules on the cycle: name the first that is a rule, not a group.
        auto it = std::find_if(path.begin(), path.end(), [&](const auto& p) { return p.first == m; });
        for (; it != path.end(); ++it)
          if (it->first < g.rules) return names_[it->first];
      }
    }
  }
  return std::nullopt;
}

}  // namespace wick::text::gbnf
