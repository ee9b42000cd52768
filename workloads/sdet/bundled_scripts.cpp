// The bundled script set: twelve scripts of short common commands, written for schedlab in the
// spirit of SDET's (SPEC SDM 057.sdet) user scripts, using only Debian's essential set (coreutils,
// grep, sed, findutils, tar, gzip, diffutils) and /bin/sh. Each script runs in its user's own
// directory, reads the shared data under $SDET_DATA, checks what its commands produced (a wrong
// result is a failure, not a silent speed-up) and removes what it made, so any order works.
// Changing a script or the data moves results: bump SdetWorkload::version().
#include "workloads/sdet/script_set.hpp"

namespace schedlab::sdet {

const std::vector<Script>& bundled_scripts() {
  static const std::vector<Script> kScripts = {
      {"edit", R"sh(# edit: an ed-like session with sed on a copy of a chapter, checked with diff and wc
set -e
cp "$SDET_DATA/text/chapter-03.txt" draft
sed -e '1,10d' -e 's/ka/KA/g' -e '/^lo/i\
inserted line' draft > draft.new
mv draft.new draft
sed -n '20,40p' draft > excerpt
sed -i -e '$a\
the end' draft
if diff "$SDET_DATA/text/chapter-03.txt" draft > changes; then exit 1; fi
test "$(tail -n 1 draft)" = "the end"
test "$(wc -l < excerpt)" -eq 21
grep -c KA draft > /dev/null
head -n 5 changes > /dev/null
rm draft excerpt changes
)sh"},
      {"wordfreq", R"sh(# wordfreq: the classic pipeline of one-shot filters
set -e
cat "$SDET_DATA"/text/chapter-0[0-3].txt | tr -s ' ' '\n' | sort | uniq -c | sort -rn | head -n 20 > top
test "$(wc -l < top)" -eq 20
words=$(cat "$SDET_DATA"/text/*.txt | wc -w)
test "$words" -gt 1000
distinct=$(tr -s ' ' '\n' < "$SDET_DATA/text/chapter-05.txt" | sort -u | wc -l)
test "$distinct" -gt 10
rm top
)sh"},
      {"treecopy", R"sh(# treecopy: copy a source tree, look through it with find, checksum and remove it
set -e
cp -R "$SDET_DATA/src" src
test "$(find src -name '*.c' | wc -l)" -eq 24
find src -type f -name '*.h' -exec cat {} + > headers
find src -type f | sort | xargs cksum > sums
test "$(wc -l < sums)" -eq 28
ls -lR src > listing
mv src/util src/misc
test -d src/misc
rm -r src headers sums listing
)sh"},
      {"archive", R"sh(# archive: tar and gzip a tree, list it, unpack it and compare
set -e
tar -cf src.tar -C "$SDET_DATA" src
gzip -1 src.tar
test "$(gzip -dc src.tar.gz | tar -tf - | grep -c '\.c$')" -eq 24
mkdir unpacked
tar -xzf src.tar.gz -C unpacked
diff -r "$SDET_DATA/src" unpacked/src
rm -r unpacked src.tar.gz
)sh"},
      {"search", R"sh(# search: grep through sources and text in the ways people do
set -e
grep -rn 'return' "$SDET_DATA/src" > hits
test "$(wc -l < hits)" -gt 100
grep -rl 'include' "$SDET_DATA/src" | sort > files
test "$(wc -l < files)" -eq 24
grep -c 'int ' "$SDET_DATA/src/core/core0.c" > /dev/null
grep -v '^$' "$SDET_DATA/src/io/io1.c" | grep -E '^int [a-z_0-9]+\(' | cut -d '(' -f 1 > names
test "$(wc -l < names)" -eq 8
grep -i -w -e kalo -e mimi "$SDET_DATA"/text/*.txt > /dev/null || true
rm hits files names
)sh"},
      {"smallfiles", R"sh(# smallfiles: make, list, move and remove many small files and directories
set -e
mkdir -p box/a/b box/c
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
  echo "note $i" > box/a/note$i
done
touch box/c/empty1 box/c/empty2
ls -l box/a > /dev/null
cat box/a/note* > box/all
test "$(wc -l < box/all)" -eq 16
mv box/a/note1 box/a/b/
cp box/a/note2 box/c/
chmod 600 box/c/note2
ln -s ../all box/c/link
test "$(cat box/c/link | head -n 1)" = "note 1"
test "$(find box -type f | wc -l)" -eq 20
du -s box > /dev/null
rm -r box
)sh"},
      {"sortmerge", R"sh(# sortmerge: split a file, sort the pieces, merge them and compare with a whole sort
set -e
cat "$SDET_DATA/text/chapter-06.txt" "$SDET_DATA/text/chapter-07.txt" > whole
split -l 150 whole part.
for p in part.*; do sort "$p" > "$p.s"; done
sort -m part.*.s > merged
sort whole > sorted
cmp merged sorted
test "$(ls part.* | wc -l)" -eq 8
rm whole part.* merged sorted
)sh"},
      {"report", R"sh(# report: a table cut, sorted, joined and summarised
set -e
cut -d , -f 3,4 "$SDET_DATA/table.csv" | sort -t , -k 1,1 > by_dept
sort -t , -k 1,1 "$SDET_DATA/depts.csv" > depts
join -t , depts by_dept > joined
test "$(wc -l < joined)" -eq 500
cut -d , -f 1 joined | uniq -c > counts
test "$(wc -l < counts)" -le 10
sort -t , -k 4,4n "$SDET_DATA/table.csv" | tail -n 3 > top3
paste -d ' ' top3 top3 | head -n 1 > /dev/null
tr ',' '\t' < top3 | expand > /dev/null
rm by_dept depts joined counts top3
)sh"},
      {"checksums", R"sh(# checksums: sums written, verified and compared
set -e
cp "$SDET_DATA"/text/chapter-0[4-7].txt .
md5sum chapter-*.txt > MD5SUMS
sha1sum chapter-*.txt > SHA1SUMS
md5sum -c --quiet MD5SUMS
sha1sum -c --quiet SHA1SUMS
echo tampered >> chapter-05.txt
if md5sum -c --quiet MD5SUMS > /dev/null 2>&1; then exit 1; fi
od -c chapter-04.txt | head -n 4 > /dev/null
cksum chapter-*.txt > /dev/null
rm chapter-*.txt MD5SUMS SHA1SUMS
)sh"},
      {"compare", R"sh(# compare: diff, cmp and comm between versions of a file
set -e
sort "$SDET_DATA/text/chapter-01.txt" > a
sed -e '5,9d' -e 's/mi/MI/' a | sort > b
if diff -u a b > ab.diff; then exit 1; fi
test "$(grep -c '^-' ab.diff)" -gt 5
if cmp -s a b; then exit 1; fi
comm -23 a b > only_a
comm -12 a b > both
test "$(($(wc -l < only_a) + $(wc -l < both)))" -eq "$(wc -l < a)"
rm a b ab.diff only_a both
)sh"},
      {"shellwork", R"sh(# shellwork: the small utilities scripts are made of
set -e
n=0
for f in "$SDET_DATA"/src/core/*.c; do
  b=$(basename "$f" .c)
  d=$(dirname "$f")
  n=$(expr $n + 1)
done
test "$n" -eq 6
test "$b" = "core5"
date +%s > stamp
test -s stamp
id -u > /dev/null
uname -s > /dev/null
pwd > /dev/null
printf '%s\n' c b a | sort | tr -d '\n' > abc
test "$(cat abc)" = "abc"
seq 1 200 | paste -s -d + > sum
test "$(expr $(sed 's/+/ + /g' sum))" -eq 20100
rm stamp abc sum
)sh"},
      {"dirs", R"sh(# dirs: a directory tree made, walked, renamed and removed
set -e
mkdir -p tree/1/2/3 tree/4/5 tree/6
for d in tree/1 tree/1/2 tree/4 tree/6; do
  cp "$SDET_DATA/depts.csv" "$d/"
done
test "$(find tree -type d | wc -l)" -eq 7
test "$(find tree -name depts.csv | wc -l)" -eq 4
ls -R tree > /dev/null
mv tree/4 tree/1/2/3/
find tree -depth -type d -empty -exec rmdir {} \;
test ! -d tree/1/2/3/4/5
test -f tree/1/2/3/4/depts.csv
rm -r tree
)sh"},
  };
  return kScripts;
}

}  // namespace schedlab::sdet
