#!/usr/bin/env python3
"""Weak labels for the intent head (C10): training examples for
`laya intent train`, built from rules and templates, reproducibly.

    scripts/intent/label.py [--corpus DIR] [--out DIR] [--seed N] [--per-class N] [--other N]

Reads DIR/{en,zh}/train.txt (default data/corpus, else /work/main/data/corpus)
and writes OUT/train.tsv (default data/intent/), one "label<TAB>text" a line,
plus OUT/stats.txt (counts by source). Same inputs and seed, same bytes.

Three sources, per language:
 1. rules: keyword/pattern rules (RULES below) over corpus lines of 6..120
    characters; a line matching exactly one class's rule gets that label
    (at most --per-class // 3 per class, so templates stay the majority);
 2. templates: TEMPLATES below with {slot} fillers from SLOTS, sampled until
    each class has --per-class examples (rules included);
 3. other: --other corpus lines that match no rule, as they are.
The hand-written test set (tests/fixtures/intent/) is never read here.
"""
import argparse, os, random, re, sys

CLASSES = ["schedule_meeting", "send_email", "search_web", "file_operation",
           "app_switch", "system_control", "text_edit"]

SLOTS = {
 "en": {
  "person": ["Anna", "Bob", "the team", "Mr. Chen", "Sarah", "my manager", "David", "the client", "Priya", "everyone", "Tom and Lisa", "the design group", "HR", "Mike"],
  "day": ["tomorrow", "on Monday", "next Tuesday", "on Friday", "this afternoon", "next week", "at 3pm", "on the 14th", "Thursday morning", "after lunch", "at 10:30", "before noon on Wednesday"],
  "topic": ["the budget", "the Q3 report", "the launch", "the contract", "project status", "the new hire", "the roadmap", "the invoice", "our trip", "the release", "the survey results", "hiring"],
  "query": ["weather in Paris", "best pizza near me", "how to boil an egg", "python list comprehension", "flights to Tokyo", "symptoms of flu", "exchange rate euro dollar", "who won the game last night", "recipe for banana bread", "cheap hotels in Rome", "what is quantum computing", "train times to Boston", "how tall is Mount Everest", "reviews of the new phone"],
  "file": ["report.pdf", "notes.txt", "the photos folder", "budget.xlsx", "the old backups", "draft_v2.docx", "the downloads folder", "invoice_march.pdf", "slides.pptx", "main.c", "the screenshots", "resume.docx"],
  "folder": ["Documents", "the desktop", "the archive folder", "Dropbox", "the USB drive", "Downloads", "the shared drive", "a new folder called Taxes"],
  "app": ["Firefox", "Chrome", "Spotify", "the terminal", "Slack", "Outlook", "the calendar", "VS Code", "Telegram", "the file manager", "Thunderbird", "LibreOffice", "Zoom", "the music player"],
  "setting": ["the volume", "the brightness", "Wi-Fi", "Bluetooth", "do not disturb", "dark mode", "the screen", "the sound", "airplane mode", "night light"],
  "span": ["the last sentence", "this paragraph", "the word", "the previous line", "everything", "the title", "the second paragraph", "that word", "the last three words"],
 },
 "zh": {
  "person": ["张经理", "小王", "李老师", "团队", "客户", "大家", "王总", "设计组", "人事部", "老陈", "财务", "刘洋"],
  "day": ["明天", "下周一", "周五下午", "今天下午三点", "后天上午", "下周", "星期四", "明早十点", "月底", "中午以后", "本周三"],
  "topic": ["预算", "季度报告", "新产品发布", "合同", "项目进度", "招聘", "年会", "报价单", "出差安排", "版本发布", "用户反馈"],
  "query": ["北京天气", "附近的餐厅", "怎么做红烧肉", "去上海的机票", "感冒吃什么药", "美元汇率", "昨晚比赛结果", "Python教程", "故宫门票", "附近的加油站", "量子计算是什么", "手机评测"],
  "file": ["报告.pdf", "会议记录.docx", "照片文件夹", "预算表.xlsx", "旧的备份", "合同草稿", "下载文件夹", "发票", "演示文稿", "简历", "截图"],
  "folder": ["桌面", "文档", "归档文件夹", "U盘", "共享盘", "下载", "新建文件夹"],
  "app": ["微信", "浏览器", "QQ", "终端", "网易云音乐", "钉钉", "日历", "记事本", "WPS", "文件管理器", "邮件客户端", "企业微信"],
  "setting": ["音量", "亮度", "无线网络", "蓝牙", "勿扰模式", "深色模式", "屏幕", "声音", "飞行模式", "护眼模式"],
  "span": ["上一句", "这一段", "这个词", "上一行", "全部内容", "标题", "第二段", "最后三个字"],
 },
}

TEMPLATES = {
 "en": {
  "schedule_meeting": ["schedule a meeting with {person} {day}", "set up a call with {person} {day} about {topic}", "can we meet {day} to discuss {topic}", "book a meeting room for {day}", "let's find a time {day} to go over {topic}", "add a meeting with {person} to my calendar {day}", "arrange a sync with {person} {day}", "move our meeting with {person} to {day}", "invite {person} to a meeting about {topic} {day}", "are you free {day} for a quick chat about {topic}", "put a 30 minute call with {person} on the calendar {day}", "reschedule the {topic} review to {day}"],
  "send_email": ["send an email to {person} about {topic}", "email {person} the notes on {topic}", "write an email to {person}", "reply to {person}'s email about {topic}", "forward the message from {person} to the team", "draft a mail to {person} saying I'll be late {day}", "mail {person} the {file}", "send {person} a message about {topic}", "compose an email to {person} regarding {topic}", "dear {person}, please find attached {file}", "email {person} {day} to confirm {topic}", "send a follow-up email to {person}"],
  "search_web": ["search for {query}", "google {query}", "look up {query}", "find {query} online", "search the web for {query}", "what is the {query}", "show me results for {query}", "bing {query}", "can you search {query}", "web search {query}", "look online for {query}"],
  "file_operation": ["delete {file}", "move {file} to {folder}", "copy {file} to {folder}", "rename {file} to final.pdf", "open the file {file}", "save {file} to {folder}", "create a new folder in {folder}", "zip {file} and send it", "compress {file}", "find the file {file}", "upload {file} to {folder}", "back up {file} to {folder}", "duplicate {file}"],
  "app_switch": ["open {app}", "switch to {app}", "launch {app}", "go to {app}", "start {app}", "bring up {app}", "close {app}", "show me {app}", "jump to {app}", "quit {app} and open {app}", "run {app}"],
  "system_control": ["turn up {setting}", "turn down {setting}", "mute {setting}", "turn off {setting}", "turn on {setting}", "lock the screen", "shut down the computer", "restart the computer", "put the laptop to sleep", "set {setting} to 50 percent", "enable {setting}", "disable {setting}", "increase {setting}", "lower {setting}"],
  "text_edit": ["delete {span}", "undo that", "copy {span}", "select {span}", "make {span} bold", "replace {span} with hello", "capitalize {span}", "cut {span}", "paste it here", "underline {span}", "fix the spelling in {span}", "rewrite {span} more formally", "move {span} to the top", "indent {span}"],
 },
 "zh": {
  "schedule_meeting": ["{day}和{person}开个会", "帮我约{person}{day}讨论{topic}", "安排一个关于{topic}的会议", "{day}预订会议室", "把和{person}的会改到{day}", "{day}有空聊一下{topic}吗", "在日历上加一个{day}的会议", "约{person}{day}碰一下{topic}", "邀请{person}参加{day}的{topic}会议", "{day}开{topic}评审会", "给我和{person}订个{day}的电话会议"],
  "send_email": ["给{person}发邮件说一下{topic}", "发一封邮件给{person}", "回复{person}的邮件", "把{file}用邮件发给{person}", "写邮件告诉{person}{day}的安排", "转发{person}的邮件给团队", "给{person}写封信说明{topic}", "邮件通知{person}{topic}的事", "{person}您好，附件是{file}", "发个邮件提醒{person}{topic}"],
  "search_web": ["搜索{query}", "百度一下{query}", "查一下{query}", "帮我在网上找{query}", "上网搜{query}", "搜一下{query}", "网上查查{query}", "用谷歌搜{query}", "我想知道{query}", "查查{query}的信息"],
  "file_operation": ["删除{file}", "把{file}移到{folder}", "复制{file}到{folder}", "把{file}重命名", "打开文件{file}", "把{file}保存到{folder}", "在{folder}新建一个文件夹", "压缩{file}", "找一下{file}", "上传{file}到{folder}", "备份{file}", "把{file}拷到{folder}"],
  "app_switch": ["打开{app}", "切换到{app}", "启动{app}", "关闭{app}", "回到{app}", "运行{app}", "调出{app}", "切到{app}去", "退出{app}"],
  "system_control": ["把{setting}调高", "把{setting}调低", "关闭{setting}", "打开{setting}", "锁屏", "关机", "重启电脑", "让电脑睡眠", "{setting}调到一半", "开启{setting}", "静音", "调大{setting}", "调小{setting}"],
  "text_edit": ["删除{span}", "撤销", "复制{span}", "选中{span}", "把{span}加粗", "把{span}替换成你好", "剪切{span}", "粘贴到这里", "给{span}加下划线", "改一下{span}的错别字", "把{span}改得正式一点", "把{span}移到开头", "撤回刚才的修改"],
 },
}

# Rules over corpus lines: a line matching exactly one class is labelled.
RULES = {
 "en": {
  "schedule_meeting": r"\b(schedule|reschedule|set up|arrange|book) (a |the |an )?(meeting|call|appointment)\b|\bmeet(ing)? (on|at|tomorrow|next)\b",
  "send_email": r"\b(send|write|forward|reply to) (an? |the )?(e-?mail|message)\b|\be-?mail (him|her|them|me|us)\b",
  "search_web": r"^(search|google|look up)\b|\bsearch (the web|online|for)\b",
  "file_operation": r"\b(delete|rename|copy|move|save|open) (the |a |this )?(file|folder|document|directory)\b",
  "app_switch": r"^(open|launch|switch to|start|close) (the )?(app|application|browser|terminal|program)\b",
  "system_control": r"\bturn (up|down|on|off) the (volume|brightness|wi-?fi|bluetooth)\b|\b(shut down|restart|reboot) the (computer|system|pc)\b",
  "text_edit": r"^(undo|redo|cut|copy|paste|select all)\b|\b(bold|italic|underline) (the )?(text|selection)\b",
 },
 "zh": {
  "schedule_meeting": r"(安排|预约|预订|约).{0,6}(会议|会面|开会)|开个会",
  "send_email": r"(发|写|回复|转发).{0,4}(邮件|电子邮件)",
  "search_web": r"^(搜索|百度|查一下)|上网(搜|查)",
  "file_operation": r"(删除|复制|移动|重命名|保存|打开).{0,3}(文件|文件夹|文档|目录)",
  "app_switch": r"^(打开|启动|切换到|关闭)(应用|程序|浏览器|软件)",
  "system_control": r"(调高|调低|打开|关闭)(音量|亮度|蓝牙|无线网络)|^(关机|重启|锁屏)",
  "text_edit": r"^(撤销|重做|剪切|粘贴|全选)|(加粗|下划线|斜体)",
 },
}

def fill(tpl, slots, rng):
    return re.sub(r"\{(\w+)\}", lambda m: rng.choice(slots[m.group(1)]), tpl)

def style(text, lang, rng):
    """Varies case and ending as people type: lower/Capitalised, sometimes
    'please', a full stop or question mark, or nothing."""
    if lang == "en":
        r = rng.random()
        if r < 0.15: text = "please " + text
        elif r < 0.25: text = text + " please"
        if rng.random() < 0.5: text = text[0].upper() + text[1:]
        text += rng.choice(["", "", ".", "?", "!"] if text.split()[0].lower() in ("can", "are") else ["", "", ".", ""])
    else:
        r = rng.random()
        if r < 0.2: text = "请" + text
        elif r < 0.3: text = "帮我" + text
        text += rng.choice(["", "", "。", "吧", ""])
    return text

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--out", default="data/intent")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-class", type=int, default=400)
    ap.add_argument("--other", type=int, default=1600)
    a = ap.parse_args()
    corpus = a.corpus or next((d for d in ("data/corpus", "/work/main/data/corpus")
                               if os.path.exists(os.path.join(d, "en", "train.txt"))), None)
    if not corpus: sys.exit("label.py: no corpus: run `make corpus` or pass --corpus DIR")
    rng = random.Random(a.seed)
    rows, stats = [], []
    for lang in ("en", "zh"):
        rules = {c: re.compile(r, re.I) for c, r in RULES[lang].items()}
        by_rule = {c: [] for c in CLASSES}
        others = []
        with open(os.path.join(corpus, lang, "train.txt"), encoding="utf-8", errors="replace") as f:
            for line in f:
                t = " ".join(line.split())
                if "\t" in t or not (6 <= len(t) <= 120): continue
                hit = [c for c, r in rules.items() if r.search(t)]
                if len(hit) == 1: by_rule[hit[0]].append(t)
                elif not hit: others.append(t)
        for c in CLASSES:
            got = sorted(set(by_rule[c]))
            rng.shuffle(got)
            got = got[: a.per_class // 3]
            seen = set(got)
            tpls = TEMPLATES[lang][c]
            n_rule = len(got)
            tries = 0
            while len(got) < a.per_class and tries < 50 * a.per_class:
                tries += 1
                t = style(fill(rng.choice(tpls), SLOTS[lang], rng), lang, rng)
                if t not in seen:
                    seen.add(t)
                    got.append(t)
            rows += [(c, t) for t in got]
            stats.append(f"{lang} {c}: {n_rule} from rules, {len(got) - n_rule} from templates")
        others = sorted(set(others))
        rng.shuffle(others)
        rows += [("other", t) for t in others[: a.other]]
        stats.append(f"{lang} other: {min(a.other, len(others))} corpus lines (of {len(others)} matching no rule)")
    rng.shuffle(rows)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "train.tsv"), "w", encoding="utf-8") as f:
        for c, t in rows: f.write(f"{c}\t{t}\n")
    with open(os.path.join(a.out, "stats.txt"), "w", encoding="utf-8") as f:
        f.write(f"corpus {corpus} seed {a.seed} per-class {a.per_class} other {a.other}\n")
        f.write("\n".join(stats) + "\n")
    print(f"wrote {len(rows)} examples to {a.out}/train.tsv")
    print("\n".join(stats))

if __name__ == "__main__":
    main()
