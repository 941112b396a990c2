-- A send's statement no longer reads, at every send, whether its worker
-- session's actor label reads as the server's own name (issue 23): the
-- session keeps that verdict, written once when it is created.
--
-- The statement folded the label's lookalikes with four translate() calls
-- and two regexp_replace() calls at every signed send, about 26 µs of
-- backend CPU for a label of 40 characters, 7% of what an agent's send
-- cost its backend (docs/benchmark.md, "An agent session's label judged
-- once"). An actor label is written once, with the session, and never
-- changed: the server now writes letagents.ReservedSender's verdict on it
-- beside it, as it writes display_key (0035).
--
-- The default is what a build from before this migration leaves, which
-- may still register sessions while a deploy is under way: its
-- registration refuses a display name that reads as the server's, so its
-- sessions' labels are not reserved.
ALTER TABLE agent_sessions ADD COLUMN label_reserved boolean NOT NULL DEFAULT false;

-- Existing sessions get ReservedSender's reading of their labels: the
-- whole label or its display part (before the first '|' or '(') keyed to
-- the server's name, full-width letters and the lookalikes folded (before
-- and after lower-casing), letters and digits kept.
UPDATE agent_sessions SET label_reserved = regexp_replace(translate(lower(translate(translate(actor_label, '！＂＃＄％＆＇（）＊＋，－．／０１２３４５６７８９：；＜＝＞？＠ＡＢＣＤＥＦＧＨＩＪＫＬＭＮＯＰＱＲＳＴＵＶＷＸＹＺ［＼］＾＿｀ａｂｃｄｅｆｇｈｉｊｋｌｍｎｏｐｑｒｓｔｕｖｗｘｙｚ｛｜｝～', '!"#$%&''()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_`abcdefghijklmnopqrstuvwxyz{|}~'), '01IOiǀɡΑΝΟαεηιοτЅІАЕОТаеоптёѕіӀӏԍոց', 'ollollganoaenlotslaeotaeonteslllgng')), '01IOiǀɡΑΝΟαεηιοτЅІАЕОТаеоптёѕіӀӏԍոց', 'ollollganoaenlotslaeotaeonteslllgng'), '[^[:alnum:]]', '', 'g') = 'letagents'
    OR regexp_replace(translate(lower(translate(translate(substring(actor_label from '^[^|(]*'), '！＂＃＄％＆＇（）＊＋，－．／０１２３４５６７８９：；＜＝＞？＠ＡＢＣＤＥＦＧＨＩＪＫＬＭＮＯＰＱＲＳＴＵＶＷＸＹＺ［＼］＾＿｀ａｂｃｄｅｆｇｈｉｊｋｌｍｎｏｐｑｒｓｔｕｖｗｘｙｚ｛｜｝～', '!"#$%&''()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_`abcdefghijklmnopqrstuvwxyz{|}~'), '01IOiǀɡΑΝΟαεηιοτЅІАЕОТаеоптёѕіӀӏԍոց', 'ollollganoaenlotslaeotaeonteslllgng')), '01IOiǀɡΑΝΟαεηιοτЅІАЕОТаеоптёѕіӀӏԍոց', 'ollollganoaenlotslaeotaeonteslllgng'), '[^[:alnum:]]', '', 'g') = 'letagents';
