#!/usr/bin/env bash
# Checks that the modules of src/ depend on each other in one direction, at every depth: the
# crate's top-level modules (src/<m>.rs with its folder src/<m>/), and in every folder the
# modules inside it (src/gpu/<m>.rs with src/gpu/<m>/, and so on). A module depends on a
# sibling where its code (not comments, not its tests) names `crate::<path>::<sibling>`, or
# `super::<sibling>` from the module's own file. Prints the layers of each folder, or each
# cycle and exits 1.
#
#   scripts/check_layers.sh        (scripts/test.sh runs it)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../src"

failed=0

# The files' code without comments and without their tests (a `#[cfg(test)]` module written
# inline ends the file's code; one in a file of its own is left out), each line prefixed with
# its place.
code_of() {
    awk '
        FNR == 1 { test = 0 }
        test && /^mod [a-z_0-9]+ *\{/ { nextfile }
        test && /^mod [a-z_0-9]+;/ { test = 0; next }
        { test = /^#\[cfg\(test\)\]/ }
        { sub(/\/\/.*/, ""); print FILENAME ":" FNR ": " $0 }' "$@"
}

# reexports_of FILE "MODULE...": the names FILE re-exports from the given modules (`use
# <module>::...;`, over as many lines as it takes), as an alternation for grep -E.
reexports_of() {
    MODULES="$2" perl -0777 -ne '
        my %mods = map { $_ => 1 } split(" ", $ENV{MODULES});
        my %names;
        while (/\buse\s+([a-z_0-9]+)::([^;]*);/g) {
            next unless $mods{$1};
            (my $rest = $2) =~ s{//[^\n]*}{}g;
            $names{$_} = 1 for grep { !/^(self|as|crate|super|pub|use)$/ }
                ($rest =~ /\b([A-Za-z_][A-Za-z_0-9]*)\b(?!\s*::)/g);
        }
        print join("|", sort keys %names);' "$1"
}

# check_folder DIR PATH: the modules of folder DIR (`.` for src/ itself), whose items are
# named `crate::PATH::<module>` (PATH empty at the top).
check_folder() {
    local dir="$1" path="$2"
    local prefix="crate::${path:+$path::}"
    local modules=() f m
    for f in "$dir"/*.rs; do
        [[ -e "$f" ]] || continue
        m="$(basename "$f" .rs)"
        [[ "$m" == lib || "$m" == tests || "$m" == mod ]] && continue
        modules+=("$m")
    done
    [[ ${#modules[@]} -gt 0 ]] || return 0
    local where="src/${path//:://}"
    [[ -n "$path" ]] || where="src"

    # The names the folder's own file (lib.rs at the top) re-exports from its modules.
    local reexports="" parent="${dir}.rs"
    [[ -n "$path" ]] || parent="lib.rs"
    if [[ -e "$parent" ]]; then
        reexports="$(reexports_of "$parent" "${modules[*]}")"
    fi
    [[ -n "$reexports" ]] || reexports='[^[:print:]]'

    declare -A deps=()
    local files code found d list
    for m in "${modules[@]}"; do
        files=("$dir/$m.rs")
        if [[ -d "$dir/$m" ]]; then
            while IFS= read -r f; do files+=("$f"); done \
                < <(find "$dir/$m" -name '*.rs' ! -name tests.rs | sort)
        fi
        code="$(code_of "${files[@]}")"
        # A path through the folder's re-exports would hide which module is used: at the top
        # every path names a module; inside a folder, a glob and the names its file re-exports
        # from its modules are refused, also inside `{...}` (whose `<module>::` paths count).
        if [[ -z "$path" ]]; then
            hidden="${prefix}([A-Z{]|\*|(${reexports})\b)"
        else
            hidden="(${prefix}|super::)(\*|(${reexports})\b)"
        fi
        braced=""
        if [[ -n "$path" ]]; then
            braced="$(sed 's/^[^:]*:[0-9]*: //' <<<"$code" | perl -0777 -ne '
                my ($prefix, $re) = @ARGV ? () : ("'"$prefix"'", "'"$reexports"'");
                while (/(?:\Q$prefix\E|\bsuper::)\{((?:[^{}]|\{(?1)\})*)\}/g) {
                    my $inner = $1; my $depth = 0; my $cur = ""; my @parts;
                    for my $c (split //, $inner) {
                        $depth++ if $c eq "{"; $depth-- if $c eq "}";
                        if ($c eq "," && $depth == 0) { push @parts, $cur; $cur = "" } else { $cur .= $c }
                    }
                    push @parts, $cur;
                    for (@parts) {
                        s/^\s+|\s+$//g; next if $_ eq "";
                        if ($_ eq "*" || /^($re)\b(?!\s*::)/) { print "HIDDEN $_\n" }
                        elsif (/^([a-z_0-9]+)(::|\s+as\s+\w+$|$)/) { print "MOD $1\n" }
                    }
                }')"
        fi
        if grep -E "$hidden" <<<"$code" >&2 || grep -q '^HIDDEN' <<<"$braced"; then
            grep '^HIDDEN' <<<"$braced" | sed "s|^HIDDEN|$where/$m: through the folder's re-exports:|" >&2 || true
            echo "check_layers: name the module in these paths (${prefix}<module>::...)" >&2
            exit 1
        fi
        found="$(grep -oE "${prefix}[a-z_0-9]+" <<<"$code" | sed "s/^${prefix}//" || true)"
        found+=" $(grep '^MOD' <<<"$braced" | sed 's/^MOD //' || true)"
        # `super::<sibling>` from the module's own file (deeper files' `super` is the module).
        found+=" $(code_of "$dir/$m.rs" | grep -oE '(^|[^:a-z_])super::[a-z_0-9]+' \
            | sed 's/.*super:://' || true)"
        list=""
        for d in $(tr ' ' '\n' <<<"$found" | sort -u); do
            [[ "$d" != "$m" && -e "$dir/$d.rs" && " $list " != *" $d "* ]] && list+="$d "
        done
        deps[$m]="$list"
    done

    # Everything each module reaches, by repeated widening (a handful of modules).
    declare -A reach=()
    for m in "${modules[@]}"; do reach[$m]=" ${deps[$m]}"; done
    local changed=1 e
    while [[ $changed -eq 1 ]]; do
        changed=0
        for m in "${modules[@]}"; do
            for d in ${reach[$m]}; do
                for e in ${deps[$d]}; do
                    if [[ "${reach[$m]}" != *" $e "* ]]; then
                        reach[$m]+="$e "
                        changed=1
                    fi
                done
            done
        done
    done

    local cycles=0
    for m in "${modules[@]}"; do
        if [[ "${reach[$m]}" == *" $m "* ]]; then
            echo "check_layers: $where/$m depends on itself through: ${deps[$m]}" >&2
            cycles=1
        fi
    done
    if [[ $cycles -eq 1 ]]; then
        echo "check_layers: import cycles among the modules of $where/; direct dependencies:" >&2
        for m in "${modules[@]}"; do echo "  $m -> ${deps[$m]}" >&2; done
        failed=1
        return 0
    fi
    echo "$where/:"
    for m in "${modules[@]}"; do echo "  $m -> ${deps[$m]:-(nothing)}"; done
}

# Every folder of src/, the top first; a folder's modules are named by its path.
check_folder . ""
while IFS= read -r dir; do
    check_folder "$dir" "$(sed 's|^\./||; s|/|::|g' <<<"$dir")"
done < <(find . -mindepth 1 -type d | sort)

if [[ $failed -eq 1 ]]; then
    echo "check_layers: import cycles (see above)" >&2
    exit 1
fi
echo "check_layers: no import cycle among the modules of src/ and of every folder in it"
