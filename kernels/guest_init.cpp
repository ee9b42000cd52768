#include "kernels/guest_init.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "kernels/process.hpp"

namespace schedlab::kernels {

std::string guest_init_script() {
  return R"INIT(#!/bin/busybox sh
# schedlab guest /init: mount the host's userland read-only, run the suite in a chroot, copy the
# bundles to the output share, power off. Every failure prints SCHEDLAB-FATAL and powers off.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo "SCHEDLAB-INIT uptime $(cut -d' ' -f1 /proc/uptime)"
fatal() { echo "SCHEDLAB-FATAL $*"; sync; poweroff -f; sleep 5; }
for m in $(cat /etc/schedlab/modules); do
  insmod /lib/modules/$m.ko || echo "SCHEDLAB-WARN insmod $m failed"
done
. /etc/schedlab/boot.conf
O9=trans=virtio,version=9p2000.L,msize=262144
mkdir -p /lower /host /out
if [ "$ROOT_MODE" = image ]; then
  i=0; while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
  mount -t ext4 -o ro,noload /dev/vda /lower || fatal "mount the root image /dev/vda"
  mkdir -p /rw; mount -t tmpfs -o size=50% tmpfs /rw; mkdir -p /rw/upper /rw/work
  mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /host || fatal "overlay on the root image"
else
  mount -t 9p -o ro,cache=$CACHE,$O9 hostroot /host || fatal "mount the host root (9p hostroot)"
fi
[ -x /host/usr/bin/env ] || fatal "host root has no /usr/bin/env"
mount -t 9p -o $O9 out /out || fatal "mount the output share (9p out)"
mount -t tmpfs -o mode=1777 tmpfs /host/tmp
mount -t tmpfs -o mode=1777 tmpfs /host/var/tmp
mount -t tmpfs -o mode=755 tmpfs /host/run
mount -t tmpfs -o mode=755 tmpfs /host/boot
# After the tmpfs mounts: a build tree under /tmp (a CI checkout) would be hidden by the guest's /tmp.
mkdir -p "/host$SUITE_DIR"
mount -t 9p -o ro,cache=loose,$O9 suite "/host$SUITE_DIR" || fatal "mount the suite share at $SUITE_DIR"
cp /boot/* /host/boot/ 2>/dev/null
mount -t proc proc /host/proc
mount -t sysfs sysfs /host/sys
mount -t devtmpfs devtmpfs /host/dev
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts -o newinstance,ptmxmode=666 devpts /host/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /host/dev/shm
mount -t debugfs debugfs /host/sys/kernel/debug
mount -t cgroup2 cgroup2 /host/sys/fs/cgroup 2>/dev/null
ifconfig lo 127.0.0.1 up
D=/host/sys/kernel/debug/sched
while read kind name value; do
  case $kind in
    features) echo "$name" > $D/features || fatal "sched feature $name: not accepted by $D/features" ;;
    tunable) echo "$value" > $D/$name || fatal "sched tunable $name=$value: cannot write $D/$name" ;;
  esac
done < /etc/schedlab/sched
mkdir -p /host/run/schedlab-out /host/run/schedlab-share
mount --bind /out /host/run/schedlab-share || fatal "bind the output share into the chroot"
cp /etc/schedlab/run.sh /host/run/schedlab-run.sh
CLEAN_ENV="/usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8 TERM=dumb"
# Each bundle goes to the host as soon as the run has written it (the run writes to tmpfs: 9p refuses
# its no-replace rename), so a kernel that dies in a later trial keeps the finished ones.
chroot /host $CLEAN_ENV "$SCHEDLAB" kernel guest-collect /run/schedlab-out /run/schedlab-share &
collector=$!
echo "SCHEDLAB-START uptime $(cut -d' ' -f1 /proc/uptime)"
chroot /host $CLEAN_ENV /bin/sh /run/schedlab-run.sh
rc=$?
if grep -qw schedlab.crash_after_run /proc/cmdline; then
  # A test aid: once the collector has copied every file of the run (10 s at most), crash the kernel,
  # before the copy below could rescue anything.
  i=0
  while [ $i -lt 100 ]; do
    missing=0
    for f in /host/run/schedlab-out/*; do [ -e "$f" ] && [ ! -e "/out/${f##*/}" ] && missing=1; done
    [ $missing = 0 ] && break
    sleep 0.1; i=$((i+1))
  done
  echo "SCHEDLAB-CRASH schedlab.crash_after_run: sysrq c"
  echo c > /proc/sysrq-trigger
fi
kill -TERM $collector
wait $collector || echo "SCHEDLAB-WARN the bundle collector exited with status $?"
# What the collector did not copy (it failed, or never started).
n=0
for f in /host/run/schedlab-out/*; do
  [ -e "$f" ] || continue
  [ -e "/out/${f##*/}" ] || cp -r "$f" /out/ || fatal "copy $f to the output share"
  n=$((n+1))
done
sync
umount /host/run/schedlab-share
umount /out
echo "SCHEDLAB-DONE rc=$rc files=$n uptime $(cut -d' ' -f1 /proc/uptime)"
[ -f /etc/schedlab/next.sh ] && . /etc/schedlab/next.sh
poweroff -f
)INIT";
}

std::string guest_boot_conf(const BootRequest& request) {
  std::string conf = "ROOT_MODE=" + std::string(request.root == RootMode::kImage ? "image" : "9p") + "\n";
  conf += "CACHE=loose\n";
  conf += "SUITE_DIR=" + shell_quote(request.schedlab_binary.parent_path().string()) + "\n";
  conf += "SCHEDLAB=" + shell_quote(request.schedlab_binary.string()) + "\n";
  return conf;
}

std::string guest_run_script(const BootRequest& request) {
  if (request.run_args.empty())
    throw InputError("kernel boot: no run arguments after `--` (e.g. -- run --workload yield)");
  std::vector<std::string> argv{request.schedlab_binary.string()};
  bool is_run = request.run_args.front() == "run";
  bool has_cache = false;
  for (const auto& a : request.run_args) {
    if (a == "--out" || a.rfind("--out=", 0) == 0)
      throw InputError("kernel boot: " + a +
                       " in the run arguments: the guest's bundles go to the boot's --out");
    if (a == "--cache-dir" || a.rfind("--cache-dir=", 0) == 0) has_cache = true;
    argv.push_back(a);
  }
  if (is_run) {
    argv.insert(argv.end(), {"--out", "/run/schedlab-out"});
    // Bundles name the recipe's label unless the run gives its own: a diff then names its sides.
    if (std::find_if(request.run_args.begin(), request.run_args.end(), [](const std::string& a) {
          return a == "--label" || a.rfind("--label=", 0) == 0;
        }) == request.run_args.end())
      argv.insert(argv.end(), {"--label", request.recipe.label});
    // The host's cache directory is read-only in the guest: generated trees go to the guest's tmpfs.
    if (!has_cache) argv.insert(argv.end(), {"--cache-dir", "/tmp/schedlab-cache"});
  }
  return "#!/bin/sh\n# written by schedlab kernel boot\ncd /tmp\n" + command_line(argv) + "\n";
}

std::string guest_kexec_script(const BootRequest& next, const std::filesystem::path& next_initrd,
                               const std::string& next_append) {
  const std::vector<std::string> load{"/usr/sbin/kexec", "-l", next.kernel.vmlinuz.string(),
                                      "--initrd=" + next_initrd.string(), "--append=" + next_append};
  return "echo " + shell_quote(std::string(kMarkKexec) + " " + next.recipe.name) + "\n" + "chroot /host " +
         command_line(load) + " || fatal 'kexec -l " + next.recipe.name +
         "'\nsync\nchroot /host /usr/sbin/kexec -e || fatal 'kexec -e'\n";
}

std::string guest_sched_settings(const Recipe& recipe) {
  std::string out;
  for (const auto& f : recipe.sched_features) out += "features " + f + "\n";
  for (const auto& [name, value] : recipe.sched_tunables) out += "tunable " + name + " " + value + "\n";
  return out;
}

}  // namespace schedlab::kernels
