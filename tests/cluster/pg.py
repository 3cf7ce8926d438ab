"""pg.py -- a throwaway PostgreSQL for the cluster's tests and benchmarks:
initdb into a temp dir, listening only on a Unix socket there, fsync off.
As root it runs as the postgres user (or nobody), since initdb refuses root.
"""
import glob
import os
import pwd
import shutil
import subprocess


def pg_bin(name):
    """PostgreSQL's programs: $HISTD_PG_BIN (a bundle on a lent machine), else
    Debian's /usr/lib/postgresql/VERSION/bin, else PATH."""
    if os.environ.get("HISTD_PG_BIN"):
        return os.path.join(os.environ["HISTD_PG_BIN"], name)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/" + name))
    return found[-1] if found else shutil.which(name)


class Postgres:
    def __init__(self, root):
        self.dir = os.path.join(root, "pg")
        self.sock = os.path.join(root, "sock")
        os.makedirs(self.sock)
        self.user = None
        if os.getuid() == 0:  # initdb refuses root
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                pw = pwd.getpwnam("nobody")
            self.user = pw.pw_name
            os.chmod(root, 0o755)
            os.chown(self.sock, pw.pw_uid, pw.pw_gid)
            os.makedirs(self.dir)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.run(pg_bin("initdb"), "-D", self.dir, "-A", "trust", "-U", "postgres", "-E", "UTF8")
        self.start()
        self.url = "host=%s dbname=postgres user=postgres" % self.sock

    def run(self, *cmd):
        if self.user:
            cmd = ("runuser", "-u", self.user, "--") + cmd
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def start(self):
        self.run(pg_bin("pg_ctl"), "-D", self.dir, "-w", "-l", os.path.join(self.dir, "server.log"), "-o",
                 "-k %s -c listen_addresses='' -c fsync=off" % self.sock, "start")

    def restart(self):
        self.run(pg_bin("pg_ctl"), "-D", self.dir, "-w", "-m", "fast", "-l", os.path.join(self.dir, "server.log"),
                 "-o", "-k %s -c listen_addresses='' -c fsync=off" % self.sock, "restart")

    def stop(self):
        try:
            self.run(pg_bin("pg_ctl"), "-D", self.dir, "-w", "-m", "immediate", "stop")
        except subprocess.CalledProcessError:
            pass

    def sql(self, query):
        out = subprocess.run([pg_bin("psql"), "-h", self.sock, "-U", "postgres", "-At", "-c",
                              query], check=True, capture_output=True, text=True)
        return out.stdout.strip()
